// Package apply owns execution: one compare-and-swap executor per proposal
// operation, the restore point taken before each one, restoring, and what
// start-up needs to reconcile executions interrupted by a crash.
//
// What a card shows, the sealed outcome, is computed by core/apply/seal
// (one op_<operation>.go there per operation). Seal is its entry here: it
// opens the proposal's repositories at one moment, holds their lock,
// checks the pins and lets the seal package compute the outcome; Keep
// keeps its objects. Each step here (ops_<operation>.go) computes the
// states it depends on again with the seal package before it writes, and
// refuses to run when they are not the sealed ones. Both run git through
// core/apply/internal/gitrun.
//
// It is the only code in Sluice that writes to a person's repository, and it
// runs only proposals whose digest matches the human decision.
//
// # API
//
//	e, err := apply.New(apply.Options{Journal: j, Roots: roots})
//	rec, err := e.Execute(ctx, id)               // an approved proposal
//	recovery, err := j.Recover(e.Revalidate)      // at start-up, before any Execute
//	res, err := e.Restore(ctx, repo, rpID, force) // a human action; audit res
//	list, err := e.ListRestorePoints(ctx, repo)   // also an intake.RestorePointLister
//	d, err := e.RestorePointDetails(ctx, repo, rpID)
//	tend, err := e.TendRestorePoints(ctx, repo, cutoff, keep) // hourly: retention
//	fold, err := e.FoldRestorePoints(ctx, repo)                // then the rest fold
//
// Reading restore points and the safety timeline is core/restorepoint's
// (List, Describe, SafetyTimeline, SafetyEvent over an opened *gitx.Repo),
// which writes nothing and which the sidecar's read-only safety tools use
// without linking the executor; the two methods above confine the path
// first and read through it.
//
// Lock files git left after a crash (index.lock, HEAD.lock, ref locks) stop
// an execution, a restore and CheckUnlocked with repo_locked naming them;
// for a needs_reconciliation record, LeftLocks tells which the interrupted
// execution's own git left (they appeared while it ran and no git works in
// the repository) and RemoveLocks removes exactly those named, each only
// while it is unchanged:
//
//	locks, err := e.LeftLocks(ctx, rec)      // for the card
//	res, err := e.RemoveLocks(ctx, rec, ls)  // a human action; audit res
//
// Failures are *errcode.Error values (core/errcode) with a stable code and
// structured details (Data): stale_base carries {ref: current SHA} ("" for
// a ref that is gone), merge_conflict the conflicting files,
// restore_conflict the changes a restore would overwrite, hook_failed the
// hook's output. The sentinels (ErrStaleBase, …) carry only a code, so they
// match any *errcode.Error with it.
//
// # What Execute guarantees
//
// Before anything is written: the record is approved, the stored proposal
// is exactly what was approved (its digest verifies and equals the approved
// digest; otherwise it fails with digest_mismatch), MarkExecuting moves it
// to executing, every pinned revision still names the pinned commit
// (otherwise stale_base with the current SHAs), and the operation's
// preconditions hold (a clean checkout where one must move, no merge or
// rebase in progress, …). A refusal at any of these points changes not one
// byte of the repository.
//
// Then a restore point is taken under refs/sluice/restore/<proposal id>/:
// the refs the operation may change as they were, and for every working
// tree it may change as much as it may change: its HEAD, index and files
// (untracked included) as a stash-shaped commit; the index alone, as a
// commit on HEAD, for a commit that runs none of the person's hooks or a
// mixed reset; HEAD alone for a soft reset. Only then does the operation
// run. Every ref moves
// with git update-ref <ref> <new> <old>, so a ref that moved in the
// meantime fails the compare-and-swap (stale_base) and nothing moves; an
// operation that fails before it changed anything drops its restore point.
// When it ends, the state it left behind is recorded beside the restore
// point, and the record is completed or failed with Outcome.RestorePoint.
// Later, FoldRestorePoints moves an ended restore point's refs into the
// one ref restorepoint.FoldedRef, which reads as they did.
// Once executing, a record always ends completed or failed, unless the
// process dies; journal.Recover then makes it needs_reconciliation. The
// named steps at which tests kill the process (see beforeStep) all lie
// between git commands, where the repository is wholly before or after the
// operation; a kill inside a git command that rewrites files (a checkout
// update, git apply, a discard) can leave that command's files half
// written, and the restore point puts them back.
//
// # Operations
//
//   - merge: computed with git merge-tree --write-tree, never in a checkout;
//     a fast-forward when possible with strategy merge, else a merge or
//     squash commit with the person's identity and signing. Conflicts fail
//     with the files and change nothing. Custom merge drivers are refused.
//   - rebase: replayed in a temporary detached worktree outside the
//     repository (hooks off, the person's signing on), then the branch moves
//     by compare-and-swap.
//   - For both: a branch that is checked out moves only when that checkout
//     has no staged or unstaged changes, and its checkout follows with a
//     two-tree read-tree (untracked files are kept; an untracked or ignored
//     file where the update brings a tracked one refuses the move before
//     anything changes, since git would overwrite an ignored file and no
//     restore point holds it). A checkout outside the allowed roots is never
//     written: branch_checked_out.
//   - discard: git restore of the paths from HEAD (index and files), and git
//     clean of them with Untracked (ignored files stay).
//   - reset: the branch (or detached HEAD) moves by compare-and-swap; mixed
//     then reads the target into the index, hard into index and files. A
//     hard reset that would overwrite an ignored file is refused first.
//   - patch: git apply to the files or (index) with --cached; all or nothing.
//   - plan: the steps in order with one restore point for the whole plan;
//     each step sees the refs as the earlier steps left them, and the first
//     failure stops the plan (its error names the step).
//   - worktree: the new branch is created by compare-and-swap, then git
//     worktree add; a restore removes the worktree and the branch.
//   - commit: git add and git commit with the person's own git (identity,
//     hooks, signing); a failing hook fails the proposal with its output and
//     the index is put back. The commit must land on the pinned HEAD, else it
//     is taken off again (stale_base).
//   - push: the pinned commit, with the person's credentials and pre-push
//     hook; a forced push is --force-with-lease=<ref>:<pinned SHA>, never a
//     bare force. A restore cannot take back what reached the remote.
//   - branch: created by compare-and-swap against "must not exist".
//   - branch_delete: only branches unmoved since the proposal, checked out
//     nowhere, whose tip HEAD or their upstream contains; the rest are kept
//     and reported in the outcome. Each repository gets its own restore
//     point (same id), which also holds the branches' configuration.
//   - submodule_pointer: record commits only the gitlink (a commit like the
//     commit operation's); return checks the submodule out, detached, at the
//     commit the superproject's index records. Its restore point lives in the
//     submodule's repository.
//
// Commit messages Sluice writes carry the trailers Sluice-Proposal: <id>
// and Sluice-Approved-Digest: <short digest>. Reflog entries of Sluice's ref
// updates start with "sluice:".
//
// # Which git runs
//
// Every process is started by core/gitx under a named profile.
// gitx.ProfileWrite (the read hardening — absolute binary, scrubbed
// environment, no hooks, no filters, no transport, no prompts — with a few
// settings for writing, never signing) unless the call says otherwise:
// merge, squash and rebased commits run under gitx.ProfileSigned and
// honour the person's signing configuration; approved commits and pushes
// run under gitx.ProfilePerson, the person's own git, because the person
// approved exactly that commit or push. Because filters are off, a
// checkout Sluice updates gets the blobs as stored (Git LFS pointers stay
// pointers). A git failure is classified by gitx.Classify, as every
// profile's is (repo_locked, conflict, not_found, invalid_argument,
// git_failed, …), and carries its errcode.GitFailure. Revisions and paths
// go in a call's revs and paths, which gitx places and checks.
//
// # Restoring
//
// Restore compares the present with the state the operation left behind
// and refuses (restore_conflict) to overwrite later work unless the person
// confirms (force); an operation that never recorded its end (the process
// died) always needs that confirmation. A branch that would move under a
// checkout the restore point did not record is refused even then. Before
// changing anything, Restore takes a restore point of the present
// (RestoreResult.UndoPoint), so a restore can be undone the same way.
package apply
