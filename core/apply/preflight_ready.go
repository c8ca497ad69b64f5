package apply

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
)

// maxBlockers bounds the sentences one preflight reports of each kind; a
// repository with more has something else wrong with it.
const maxBlockers = 20

// readiness adds to out, changing nothing, every reason the executor would
// refuse or fail the proposal now that the person can fix where it is
// (Blockers), and what of theirs will run beside it (Notices). It checks
// what the executor checks before it writes: git's locks, the checkout a
// merge or rebase moves (clean, no operation in progress, nothing
// untracked in the way of the files it adds), the identity of the commits
// made in the person's name; and, as notices, the hooks of theirs that run
// and the files a filter of theirs would have transformed.
func (r *run) readiness(ctx context.Context, out *Preflight) error {
	if err := r.readyLocks(out); err != nil {
		return err
	}
	r.e.step("locks-read")
	for i, s := range stepsOf(r.p.Args) {
		sealed := r.sealedAt(i)
		// The tree a checkout update leads to, from the pinned commit: only
		// the first step starts from what was pinned.
		after := ""
		if i == 0 && sealed != nil {
			after = sealed.After
		}
		var err error
		switch st := s.(type) {
		case *mergeStep:
			err = r.readyBranch(ctx, out, st.a.Target, "the target branch "+st.a.Target, after)
			if err == nil && needsCommit(sealed) {
				err = r.readyIdentity(ctx, out, gitx.ProfileSigned, "the merge commit")
			}
		case *rebaseStep:
			err = r.readyBranch(ctx, out, st.a.Branch, "the branch "+st.a.Branch, after)
			if err == nil && needsCommit(sealed) {
				err = r.readyIdentity(ctx, out, gitx.ProfileSigned, "the rebased commits")
			}
		case *commitStep:
			if sealed != nil && sealed.Below != "" {
				out.Blockers = append(out.Blockers, stackedWhy(sealed.Below))
			}
			err = r.readyCommit(ctx, out, "the commit")
		case *submoduleStep:
			if st.a.Action == proposal.SubmoduleReturn {
				break
			}
			err = r.readyCommit(ctx, out, "the commit of the submodule pointer")
		case *pushStep:
			if hooks := r.main.installedHooks(ctx, []string{"pre-push"}); len(hooks) > 0 {
				out.Notices = append(out.Notices, "your pre-push hook will run: Sluice pushes with your own git, as you would; if the hook refuses, nothing is pushed")
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// sealedAt is the sealed outcome of step i (nil when there is none).
func (r *run) sealedAt(i int) *proposal.Sealed {
	s := r.p.Sealed
	switch {
	case s == nil:
		return nil
	case len(s.Steps) > 0 && i < len(s.Steps):
		return &s.Steps[i]
	case len(s.Steps) > 0 || i > 0:
		return nil
	}
	return s
}

// needsCommit reports whether a merge or rebase outcome makes commits
// (a merge or squash commit, replayed commits), which carry the person's
// identity; a fast-forward or a merge with nothing to do makes none.
func needsCommit(s *proposal.Sealed) bool {
	return s != nil && !s.FastForward && len(s.Moves) > 0
}

// readyLocks reports git's lock files in every repository the proposal
// touches: the executor refuses to start while one is there. A repository
// where a git of Sluice's own that leaves lock files works now (an
// execution, a restore, the start-up's drop of sealed refs: they hold the
// repository's lock) is not looked at: its locks could not be told from
// the person's. The approval's check waits for it and looks then
// (CheckUnlocked), and so does the execution.
func (r *run) readyLocks(out *Preflight) error {
	for _, rc := range r.repos() {
		unlock, ok := r.e.tryLock(rc.path)
		if !ok {
			continue
		}
		ls, err := rc.locks()
		unlock()
		if err != nil {
			return err
		}
		for _, l := range ls {
			if len(out.Blockers) >= maxBlockers {
				return nil
			}
			why := "no git process is running there, so a git that was stopped left it: remove it once you are sure no git runs, and this card can be approved"
			if l.InUse {
				why = "a git process is working in the repository now: once it finishes, this card can be approved"
			}
			out.Blockers = append(out.Blockers, fmt.Sprintf("git's lock file %s is in the repository (%s); %s", l.Shown, l.What, why))
		}
	}
	return nil
}

// readyBranch reports what keeps the checkout of branch, if it is checked
// out, from following a merge or rebase: changes to tracked files, an
// operation in progress, files git does not track where the update to the
// tree after adds one (when after is known).
func (r *run) readyBranch(ctx context.Context, out *Preflight, branch, what, after string) error {
	rc := r.main
	ref := proposal.BranchRef(branch)
	wt, err := r.checkedOut(ctx, rc, ref)
	if err != nil {
		if _, ok := errcode.As(err); ok {
			out.Blockers = append(out.Blockers, err.Error())
			return nil
		}
		return err
	}
	if wt == nil {
		return nil
	}
	if err := requireNoOperation(*wt); err != nil {
		out.Blockers = append(out.Blockers, err.Error())
		return nil
	}
	dirty, err := rc.dirtyTracked(ctx, *wt)
	if err != nil {
		return err
	}
	if len(dirty) > 0 {
		out.Blockers = append(out.Blockers, fmt.Sprintf("%s is checked out in %s, which has uncommitted changes (%s); Sluice moves a checkout only when it is clean: commit or stash them, and this card can be approved",
			what, wt.path, strings.Join(dirty, ", ")))
		return nil
	}
	old := r.p.Pinned.Refs[ref]
	if old == "" {
		old = r.p.Pinned.Refs[branch]
	}
	if after == "" || old == "" {
		return nil
	}
	added, err := rc.addedPaths(ctx, old, after)
	if err != nil {
		// An object that is gone makes the card stale, which the pins
		// already say; this check has nothing to add.
		return nil
	}
	if in := inTheWay(*wt, added); len(in) > 0 {
		out.Blockers = append(out.Blockers, fmt.Sprintf("the checkout in %s cannot follow without overwriting files git does not track there (untracked or ignored): %s; move them away, and this card can be approved",
			wt.path, strings.Join(limitList(in, 20), ", ")))
	}
	return r.readyFilters(ctx, out, *wt, old, after)
}

// readyFilters tells, as a notice, which files the checkout update writes
// that a git filter of the person's (Git LFS, git-crypt, …) would
// transform: Sluice updates a checkout with filters off, so those files
// hold what git stores (an LFS pointer, say) until the person checks them
// out again with their own git.
func (r *run) readyFilters(ctx context.Context, out *Preflight, wt worktree, old, after string) error {
	rc := r.main
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"diff-tree", "-r", "-z", "--name-only", "--no-renames", "--diff-filter=AMT"}, revs: []string{old, after}})
	if err != nil {
		return nil
	}
	var paths []string
	for _, p := range strings.Split(string(res.out), "\x00") {
		if p != "" {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return nil
	}
	res, err = rc.g.run(ctx, call{dir: wt.path, args: []string{"check-attr", "--stdin", "-z", "filter"}, stdin: nulList(paths)})
	if err != nil {
		return err
	}
	var filtered []string
	f := strings.Split(string(res.out), "\x00")
	for i := 0; i+2 < len(f); i += 3 {
		if v := f[i+2]; v != "unspecified" && v != "unset" && v != "" {
			filtered = append(filtered, fmt.Sprintf("%s (filter %s)", f[i], v))
		}
	}
	if len(filtered) > 0 {
		out.Notices = append(out.Notices, fmt.Sprintf("the checkout in %s is updated without git's filters, so %s will hold what git stores (for Git LFS, the pointer) until you check them out again with your own git (git lfs checkout, for Git LFS)",
			wt.path, strings.Join(limitList(filtered, 10), ", ")))
	}
	return nil
}

// readyCommit reports what keeps the person's git from making a commit
// on the checked-out branch (an operation in progress, no identity), and
// the hooks of theirs that will run.
func (r *run) readyCommit(ctx context.Context, out *Preflight, what string) error {
	if err := requireNoOperation(r.main.main()); err != nil {
		out.Blockers = append(out.Blockers, err.Error())
	}
	if err := r.readyIdentity(ctx, out, gitx.ProfilePerson, what); err != nil {
		return err
	}
	for _, h := range r.main.installedHooks(ctx, commitHooks) {
		n := fmt.Sprintf("your %s hook will run: Sluice commits with your own git, as you would", h)
		switch h {
		case "pre-commit", "commit-msg", "prepare-commit-msg":
			n += "; if it refuses, nothing is committed, and if it changes what is committed, Sluice takes its commit back"
		}
		out.Notices = append(out.Notices, n)
	}
	return nil
}

// readyIdentity reports a commit the person's git could not make for want
// of an identity: git var resolves the author and committer identities
// exactly as git commit does (user.name and user.email, or what git may
// guess unless user.useConfigOnly forbids it), under the profile the
// executor's commit runs with.
func (r *run) readyIdentity(ctx context.Context, out *Preflight, profile gitx.Profile, what string) error {
	rc := r.main
	for _, v := range []string{"GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT"} {
		res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"var", v}, profile: profile, ok: []int{128}})
		if err != nil {
			return err
		}
		if res.exit == 0 {
			continue
		}
		out.Blockers = append(out.Blockers, fmt.Sprintf("%s is made in your name, but git has no identity for you in this repository (%s); set it with git config --global user.name \"Your Name\" and git config --global user.email you@example.com, and this card can be approved",
			what, lastLine(res.stderr)))
		return nil
	}
	return nil
}

// lastLine is the last line of git's message, without "fatal: ".
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimPrefix(s, "fatal: ")
}

// installedHooks lists which of the named hooks the person has installed
// (an executable file in core.hooksPath, or in the repository's hooks
// directory). core.hooksPath is read with the person's git: the hardened
// one overrides it.
func (rc *repoCtx) installedHooks(ctx context.Context, names []string) []string {
	dir := filepath.Join(rc.repo.CommonDir, "hooks")
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"config", "--path", "--get", "core.hooksPath"}, profile: gitx.ProfilePerson, ok: []int{1}})
	if p := res.text(); err == nil && res.exit == 0 && p != "" {
		if !filepath.IsAbs(p) {
			p = filepath.Join(rc.path, p)
		}
		dir = p
	}
	var out []string
	for _, h := range names {
		if st, err := os.Stat(filepath.Join(dir, h)); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			out = append(out, h)
		}
	}
	return out
}
