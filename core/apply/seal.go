package apply

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
)

// A sealed outcome is computed by the app when a proposal arrives, before
// its card opens (see proposal.Sealed). Each operation's step says how it
// seals (sealer) and checks, when it runs, that it produces exactly that
// outcome. Sealing writes only git objects and the one ref that keeps them
// (refs/sluice/sealed/<id>); it never touches the person's index, working
// tree or branches, and runs no hook, filter or driver the repository
// configures.

// sealer is implemented by every step: it computes the step's outcome on
// the state the sealing has reached.
type sealer interface {
	seal(ctx context.Context, s *sealing) (proposal.Sealed, error)
}

// sealing is one proposal being sealed.
type sealing struct {
	r  *run
	rc *repoCtx
	// tmp holds temporary index files; removed when sealing ends.
	tmp string
	n   int
	// worktree, in a plan, is the tree the main working tree holds after
	// the steps sealed so far moved its checkout ("" while it is what is
	// on disk). overlay is a tree that holds, for the files in overlaid,
	// what earlier steps (a patch, a discard) leave in them.
	worktree string
	overlay  string
	overlaid map[string]bool
	// env is added to every git process: a scratch object directory when
	// what is computed is only compared, never kept.
	env []string
}

// run runs git in the repository with the sealing's environment.
func (s *sealing) run(ctx context.Context, c call) (result, error) {
	c.dir = s.rc.path
	c.env = append(slices.Clone(s.env), c.env...)
	return s.rc.g.run(ctx, c)
}

// scratch makes the sealing write its objects to a temporary object
// directory inside its scratch directory, so the repository stays
// exactly as it was.
func (s *sealing) scratch() error {
	objs := filepath.Join(s.tmp, "objects")
	if err := os.Mkdir(objs, 0o700); err != nil {
		return err
	}
	s.env = []string{"GIT_OBJECT_DIRECTORY=" + objs, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + s.rc.objectsDir()}
	return nil
}

// Seal computes proposal p's outcome, writes the objects it names into
// the repository and keeps them under proposal.SealedRef(p.ID). The
// proposal must not carry an outcome already: only the app seals. A
// proposal whose outcome cannot be produced (a patch that does not apply,
// a merge that conflicts, nothing to commit) is refused with the reason,
// and nothing stays behind but unreferenced objects.
func (e *Executor) Seal(ctx context.Context, p proposal.Proposal) (*proposal.Sealed, error) {
	if p.Sealed != nil {
		return nil, errcode.New(errcode.InvalidArgument, "a proposal's outcome is sealed by the Sluice app; it cannot come with the proposal")
	}
	r := &run{e: e, p: p}
	if err := r.open(ctx); err != nil {
		return nil, err
	}
	unlock, err := e.lock(ctx, reposOf(p))
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, ok := p.Args.(*proposal.BranchDeleteArgs); !ok {
		if err := r.checkPins(ctx); err != nil {
			return nil, err
		}
	}
	head, err := r.headName(ctx)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "sluice-seal-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	s := &sealing{r: r, rc: r.main, tmp: tmp}
	e.step("seal-start")
	var out proposal.Sealed
	steps := stepsOf(p.Args)
	if len(steps) == 1 {
		if out, err = sealStep(ctx, s, steps[0]); err != nil {
			return nil, err
		}
	} else {
		if out, err = s.sealPlan(ctx, steps); err != nil {
			return nil, err
		}
	}
	out.Ref, out.Head = proposal.SealedRef(p.ID), head
	// The outcome is the objects themselves (no git Sluice runs reads
	// replace refs or grafts); the card says when the person's own git
	// would show the repository otherwise.
	if out.Indirections, err = r.main.repo.Indirections(ctx); err != nil {
		return nil, err
	}
	e.step("seal-computed")
	return &out, nil
}

func sealStep(ctx context.Context, s *sealing, st step) (proposal.Sealed, error) {
	sl, ok := st.(sealer)
	if !ok {
		return proposal.Sealed{}, errcode.New(errcode.Unsupported, "%s cannot be sealed", st.name())
	}
	return sl.seal(ctx, s)
}

// sealPlan seals each step of a plan on the state the steps before it
// leave: the refs they move; when a step moves the checkout (a merge or
// rebase of the checked-out branch, a hard reset), the tree it leaves;
// when it changes files (a patch, a discard), those files as it leaves
// them. A hard reset after a step that changed files, or a discard after
// the checkout moved, refuses the plan with that reason.
func (s *sealing) sealPlan(ctx context.Context, steps []step) (proposal.Sealed, error) {
	out := proposal.Sealed{}
	for i, st := range steps {
		_, isDiscard := st.(*discardStep)
		reset, isReset := st.(*resetStep)
		if (isReset && reset.a.Mode == proposal.ResetHard && s.overlay != "") || (isDiscard && s.worktree != "") {
			return out, errcode.New(errcode.Unsupported, "plan step %d (%s) works on files an earlier step changes in a way its outcome cannot be computed from: propose the steps one at a time", i+1, st.name())
		}
		h, err := s.r.head(ctx)
		if err != nil {
			return out, err
		}
		sub, err := sealStep(ctx, s, st)
		if err != nil {
			return out, planStepError(i, len(steps), st, err)
		}
		out.Steps = append(out.Steps, sub)
		switch x := st.(type) {
		case *mergeStep:
			if h.sym == proposal.BranchRef(x.a.Target) {
				s.worktree, s.overlay, s.overlaid = sub.After, "", nil
			}
		case *rebaseStep:
			if h.sym == proposal.BranchRef(x.a.Branch) {
				s.worktree, s.overlay, s.overlaid = sub.After, "", nil
			}
		case *resetStep:
			if x.a.Mode == proposal.ResetHard {
				s.worktree, s.overlay, s.overlaid = sub.After, "", nil
			}
		case *patchStep:
			if x.a.Target != proposal.PatchWorktree {
				break
			}
			if s.worktree != "" {
				s.worktree = sub.After
			} else if err := s.addOverlay(ctx, sub.After, sub.SealedPaths()); err != nil {
				return out, err
			}
		case *discardStep:
			if err := s.addOverlay(ctx, sub.After, sub.SealedPaths()); err != nil {
				return out, err
			}
		}
		// A later step sees the refs this one moves.
		for _, m := range sub.Moves {
			if m.Repo == "" && m.To != "" {
				s.r.moved(s.rc, m.Ref, m.To, m.Ref == "HEAD" || m.Ref == h.sym)
			}
		}
	}
	return out, nil
}

// addOverlay records that files hold what tree has for them after a
// step; what earlier steps left in other files stays.
func (s *sealing) addOverlay(ctx context.Context, tree string, files []string) error {
	env, _, err := s.index(ctx, tree, nil)
	if err != nil {
		return err
	}
	var keep []string
	for f := range s.overlaid {
		if !slices.Contains(files, f) {
			keep = append(keep, f)
		}
	}
	slices.Sort(keep)
	if err := s.applyOverlay(ctx, env, keep); err != nil {
		return err
	}
	if s.overlay, err = s.writeTree(ctx, env); err != nil {
		return err
	}
	if s.overlaid == nil {
		s.overlaid = map[string]bool{}
	}
	for _, f := range files {
		s.overlaid[f] = true
	}
	return nil
}

// applyOverlay replaces, in the index of env, the entries of files by the
// overlay's (removing those the overlay does not have).
func (s *sealing) applyOverlay(ctx context.Context, env []string, files []string) error {
	if len(files) == 0 || s.overlay == "" {
		return nil
	}
	if _, err := s.run(ctx, call{args: []string{"rm", "--cached", "-r", "-q", "--ignore-unmatch", "--pathspec-from-file=-", "--pathspec-file-nul"},
		env: env, stdin: nulList(files)}); err != nil {
		return err
	}
	over, _, err := s.index(ctx, s.overlay, nil)
	if err != nil {
		return err
	}
	res, err := s.run(ctx, call{args: []string{"ls-files", "-s", "-z"}, paths: files, dashdash: true, env: over})
	if err != nil {
		return err
	}
	if len(res.out) > 0 {
		_, err = s.run(ctx, call{args: []string{"update-index", "-z", "--index-info"}, env: env, stdin: res.out})
	}
	return err
}

// Keep makes the objects of p's sealed outcome reachable: a commit whose
// tree holds every sealed tree, under refs/sluice/sealed/<id>. Until then
// they are objects nothing refers to, so a proposal that is never stored
// leaves nothing behind that git's own gc does not clean. Keep is called
// once the proposal is stored, and again at start-up for every proposal
// still open (a crash may have come in between); a ref that exists is
// left as it is.
func (e *Executor) Keep(ctx context.Context, p proposal.Proposal) error {
	if p.Sealed == nil {
		return nil
	}
	e.step("seal-keep")
	rc, err := e.openRepo(ctx, p.Repo)
	if err != nil {
		return err
	}
	ref := proposal.SealedRef(p.ID)
	if res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"rev-parse", "--verify", "--quiet"}, revs: []string{ref}, ok: []int{1}}); err != nil {
		return err
	} else if res.exit == 0 {
		return nil
	}
	tree, err := rc.keptTree(ctx, p.Sealed)
	if err != nil {
		return err
	}
	c, err := rc.commitTree(ctx, tree, nil, "sluice: sealed outcome of proposal "+p.ID)
	if err != nil {
		return err
	}
	if _, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"update-ref", "-m", "sluice: seal"}, revs: []string{ref, c, rc.g.zero}}); err != nil {
		return err
	}
	e.step("seal-kept")
	return nil
}

// keptTree is a tree that holds every tree of a sealed outcome, for a
// commit under refs/sluice/sealed/ to keep.
func (rc *repoCtx) keptTree(ctx context.Context, sealed *proposal.Sealed) (string, error) {
	var trees []string
	for _, x := range append([]proposal.Sealed{*sealed}, sealed.Steps...) {
		for _, t := range []string{x.Before, x.After} {
			if t != "" && !slices.Contains(trees, t) {
				trees = append(trees, t)
			}
		}
	}
	var in bytes.Buffer
	for i, t := range trees {
		fmt.Fprintf(&in, "040000 tree %s\tt%02d\n", t, i)
	}
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"mktree"}, stdin: in.Bytes()})
	if err != nil {
		if strings.Contains(stderrOf(err), "bad") || strings.Contains(stderrOf(err), "missing") {
			return "", errcode.New(errcode.StaleBase, "the sealed outcome's objects are no longer in the repository; the proposal cannot run")
		}
		return "", err
	}
	return res.text(), nil
}

// Unseal lets go of proposal id's sealed objects in repo (when the
// proposal was never stored, or its retention ended): its own ref, and
// its entry in the ref that keeps every folded outcome (see kept.go).
// Objects that are already let go are not an error.
func (e *Executor) Unseal(ctx context.Context, repo, id string) error {
	if !proposal.ValidID(id) {
		return errcode.New(errcode.InvalidArgument, "invalid proposal id")
	}
	rc, err := e.openRepo(ctx, repo)
	if err != nil {
		return err
	}
	// Deleting a ref, git locks packed-refs as well as the ref (the ref
	// may be packed), and packed-refs.lock is one of the locks the lock
	// check reads. The repository's lock keeps this delete and the check
	// apart, so that the start-up's drops are never taken for the
	// person's git (see CheckUnlocked).
	unlock, err := e.lock(ctx, []string{rc.path})
	if err != nil {
		return err
	}
	defer unlock()
	if _, err = rc.g.run(ctx, call{dir: rc.path, args: []string{"update-ref", "-d"}, revs: []string{proposal.SealedRef(id)}}); err != nil {
		return err
	}
	_, k, err := rc.readSealed(ctx)
	if err != nil || k.entries[id] == "" {
		return err
	}
	_, err = rc.rewriteKept(ctx, k, nil, map[string]bool{id: true})
	return err
}

// SealedIDs lists the proposal ids that have sealed objects in repo,
// under a ref of their own or folded into the one that keeps them all.
func (e *Executor) SealedIDs(ctx context.Context, repo string) ([]string, error) {
	rc, err := e.openRepo(ctx, repo)
	if err != nil {
		return nil, err
	}
	refs, k, err := rc.readSealed(ctx)
	if err != nil {
		return nil, err
	}
	ids := slices.Collect(maps.Keys(k.entries))
	for _, r := range refs {
		if k.entries[r.id] == "" {
			ids = append(ids, r.id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// index returns the environment of a new temporary index file, filled
// from tree ("" leaves it empty), or from a copy of the worktree's own
// index when copyOf is set.
func (s *sealing) index(ctx context.Context, tree string, copyOf *worktree) ([]string, string, error) {
	s.n++
	path := filepath.Join(s.tmp, "index"+strconv.Itoa(s.n))
	env := []string{"GIT_INDEX_FILE=" + path}
	if copyOf != nil {
		if err := gitx.CopyIndex(filepath.Join(copyOf.gitDir, "index"), path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, "", err
		}
		return env, path, nil
	}
	if tree != "" {
		if _, err := s.run(ctx, call{args: []string{"read-tree"}, revs: []string{tree}, env: env}); err != nil {
			return nil, "", err
		}
	}
	return env, path, nil
}

// copyIndexFile copies a temporary index to a new one.
func (s *sealing) copyIndexFile(from string) ([]string, error) {
	s.n++
	path := filepath.Join(s.tmp, "index"+strconv.Itoa(s.n))
	if err := gitx.CopyIndex(from, path); err != nil {
		return nil, err
	}
	return []string{"GIT_INDEX_FILE=" + path}, nil
}

// writeTree writes the tree of a temporary index.
func (s *sealing) writeTree(ctx context.Context, env []string) (string, error) {
	res, err := s.run(ctx, call{args: []string{"write-tree"}, env: env})
	if err != nil {
		if strings.Contains(stderrOf(err), "unmerged") {
			return "", errcode.New(errcode.OperationInProgress, "the index has unresolved conflicts; resolve or abort them first")
		}
		return "", err
	}
	return res.text(), nil
}

// bulkObjects makes an add write the blobs it stores into one pack
// instead of a loose object each: git's bulk check-in, for files larger
// than core.bigFileThreshold that no filter or line-ending conversion
// touches (git decides which, and hashes the others as always). The
// objects, their ids and the index are the same; a 1,000-file change is
// one file written and synced instead of a thousand, and reading the
// blobs back for the file list reads one pack. The setting holds for
// this add only: diffs still use the person's threshold.
// A path list as long as bulkPaths gets the same; a shorter one keeps
// git's loose objects, so that small proposals do not each leave a pack
// behind (git's own gc folds packs together once there are 50).
var bulkObjects = []string{"-c", "core.bigFileThreshold=1"}

const bulkPaths = 100

// addPaths stages paths (NUL-separated on stdin, so any path is literal)
// into a temporary index from the working tree, with every change:
// modifications, deletions, new files and modes.
func (s *sealing) addPaths(ctx context.Context, env []string, paths []string, extra ...string) error {
	if len(paths) == 0 {
		return nil
	}
	args := append([]string{"add", "--all"}, extra...)
	args = append(args, "--pathspec-from-file=-", "--pathspec-file-nul")
	c := call{args: args, env: env, stdin: nulList(paths)}
	if len(paths) >= bulkPaths {
		c.global = bulkObjects
	}
	_, err := s.run(ctx, c)
	if err != nil {
		if st := stderrOf(err); strings.Contains(st, "did not match") || strings.Contains(st, "ignored by one of your .gitignore") {
			return &errcode.Error{Code: errcode.InvalidArgument, Err: err, Msg: "a path cannot be committed: " + clip(strings.TrimSpace(st), 500)}
		}
		return err
	}
	return nil
}

func nulList(paths []string) []byte {
	var b bytes.Buffer
	for _, p := range paths {
		b.WriteString(p)
		b.WriteByte(0)
	}
	return b.Bytes()
}

// listPaths runs a git command that prints NUL-separated paths.
func (s *sealing) listPaths(ctx context.Context, env []string, c call) ([]string, error) {
	c.env = env
	res, err := s.run(ctx, c)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range strings.Split(string(res.out), "\x00") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out, nil
}

// tree is the tree of a commit.
func (s *sealing) tree(ctx context.Context, commit string) (string, error) {
	t, err := s.rc.resolveTrees(ctx, commit)
	if err != nil {
		return "", err
	}
	return t[commit], nil
}

// newTree writes the temporary index of env as a tree and lists how it
// differs from before; a tree the same as before is nothing to commit
// (nothing says why).
func (s *sealing) newTree(ctx context.Context, env []string, before string, nothing *errcode.Error) (string, []proposal.FileChange, error) {
	after, err := s.writeTree(ctx, env)
	if err != nil {
		return "", nil, err
	}
	if after == before {
		return "", nil, nothing
	}
	files, err := s.changes(ctx, before, after)
	if err != nil {
		return "", nil, err
	}
	return after, files, nil
}

// changes lists the changes from tree a to tree b with their modes,
// blobs, sizes and whether git treats them as binary. Renames are
// detected as git's diff would show them.
func (s *sealing) changes(ctx context.Context, a, b string) ([]proposal.FileChange, error) {
	out := []proposal.FileChange{}
	if a == b {
		return out, nil
	}
	return s.changesByRule(ctx, a, b)
}

// changesByNumstat is changes with git's line counts saying which files
// are binary (see seal_facts.go).
func (s *sealing) changesByNumstat(ctx context.Context, a, b string) ([]proposal.FileChange, error) {
	out := []proposal.FileChange{}
	// The line counts that say which files git treats as binary read every
	// blob on both sides; the sizes need only each blob's header. So the
	// sizes are looked up at the same time, from the list of blobs a tree
	// comparison gives without reading any.
	var sizes map[string]int64
	var sizesErr error
	var wg sync.WaitGroup
	wg.Go(func() { sizes, sizesErr = s.blobSizes(ctx, a, b) })
	res, err := s.run(ctx, call{args: []string{"diff-tree", "-r", "-z", "-M", "--raw", "--numstat", "--no-commit-id", "--no-abbrev"}, revs: []string{a, b}, dashdash: true})
	wg.Wait()
	if err == nil {
		err = sizesErr
	}
	if err != nil {
		return nil, err
	}
	for _, r := range gitx.ParseRawNumstat(res.out) {
		c := fileChangeOf(r)
		c.Binary = r.Binary
		blob := c.Blob
		if blob == "" {
			blob = c.OldBlob
		}
		c.Size = sizes[blob]
		out = append(out, c)
	}
	return out, nil
}

// blobSizes are the sizes of the blobs that differ between trees a and b
// (a gitlink's commit is no blob and has none), in two processes that
// read no blob's content: the raw comparison and one cat-file.
func (s *sealing) blobSizes(ctx context.Context, a, b string) (map[string]int64, error) {
	res, err := s.run(ctx, call{args: []string{"diff-tree", "-r", "-z", "--raw", "--no-commit-id", "--no-abbrev"}, revs: []string{a, b}, dashdash: true})
	if err != nil {
		return nil, err
	}
	var in bytes.Buffer
	for _, r := range gitx.ParseRawNumstat(res.out) {
		for _, blob := range []string{r.Blob, r.OldBlob} {
			if strings.Trim(blob, "0") != "" {
				in.WriteString(blob + "\n")
			}
		}
	}
	sizes := map[string]int64{}
	if in.Len() == 0 {
		return sizes, nil
	}
	res, err = s.run(ctx, call{args: []string{"cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)"}, stdin: in.Bytes()})
	if err != nil {
		return nil, err
	}
	for _, l := range strings.Split(res.text(), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[1] == "blob" {
			sizes[f[0]], _ = strconv.ParseInt(f[2], 10, 64)
		}
	}
	return sizes, nil
}

// commitList lists the commits reachable from include and from none of
// exclude: the first proposal.MaxListedCommits with their subjects, and
// the count.
func (rc *repoCtx) commitList(ctx context.Context, include string, exclude ...string) (*proposal.CommitList, error) {
	revs := []string{include}
	for _, x := range exclude {
		revs = append(revs, "^"+x)
	}
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"rev-list", "--count"}, revs: revs, dashdash: true})
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(res.text())
	if err != nil {
		return nil, errcode.New(errcode.GitFailed, "git rev-list gave an unexpected count")
	}
	out := &proposal.CommitList{Count: n, Commits: []proposal.CommitRef{}}
	if n == 0 {
		return out, nil
	}
	res, err = rc.g.run(ctx, call{dir: rc.path, args: []string{"log", "--no-decorate", "--format=%H%x00%s", "-n", strconv.Itoa(proposal.MaxListedCommits)}, revs: revs, dashdash: true})
	if err != nil {
		return nil, err
	}
	for _, l := range strings.Split(res.text(), "\n") {
		if h, subj, ok := strings.Cut(l, "\x00"); ok {
			out.Commits = append(out.Commits, proposal.CommitRef{SHA: h, Subject: subj})
		}
	}
	return out, nil
}

// refuseFilters refuses paths that a git filter (Git LFS, git-crypt, …)
// would transform on commit: Sluice commits the exact bytes it sealed
// and runs no filter before a person approved.
func (s *sealing) refuseFilters(ctx context.Context, files []proposal.FileChange) error {
	return s.refuseFiltersIn(ctx, files, nil)
}

// refuseFiltersIn is refuseFilters with the attributes of the temporary
// index of env (check-attr --cached: its .gitattributes files, and the
// repository's own info/attributes), or of the working tree when env is
// nil.
func (s *sealing) refuseFiltersIn(ctx context.Context, files []proposal.FileChange, env []string) error {
	if len(files) == 0 {
		return nil
	}
	var paths []string
	for _, f := range files {
		if f.Status != proposal.FileDeleted {
			paths = append(paths, f.Path)
		}
	}
	if len(paths) == 0 {
		return nil
	}
	args := []string{"check-attr", "--stdin", "-z"}
	if env != nil {
		args = append(args, "--cached")
	}
	res, err := s.run(ctx, call{args: append(args, "filter"), env: env, stdin: nulList(paths)})
	if err != nil {
		return err
	}
	f := strings.Split(string(res.out), "\x00")
	for i := 0; i+2 < len(f); i += 3 {
		if v := f[i+2]; v != "unspecified" && v != "unset" && v != "" {
			return errcode.New(errcode.Unsupported, "%s uses the git filter %q; Sluice commits exactly the bytes shown on the card and runs no filter before approval, so commit this path yourself", f[i], v)
		}
	}
	return nil
}

// headMove is the move of the checked-out branch (or a detached HEAD).
func (r *run) headMove(ctx context.Context, to string) (proposal.RefMove, error) {
	h, err := r.head(ctx)
	if err != nil {
		return proposal.RefMove{}, err
	}
	ref := h.sym
	if ref == "" {
		ref = "HEAD"
	}
	return proposal.RefMove{Ref: ref, From: r.expect["HEAD"], To: to}, nil
}

// worktreeState is the state of the given paths of the working tree as a
// tree: HEAD's tree with each path replaced by what is on disk (absent
// when it is gone), and the temporary index that holds it. Untracked
// files are included only when listed. The files are hashed on a copy of
// the person's index, whose stat data spares rehashing what did not
// change; the entries for the paths are then carried over onto HEAD's
// tree, so nothing else the person staged comes along.
func (s *sealing) worktreeState(ctx context.Context, headTree string, paths []string) (string, string, error) {
	wt := s.rc.main()
	scan, _, err := s.index(ctx, "", &wt)
	if err != nil {
		return "", "", err
	}
	env, idx, err := s.index(ctx, headTree, nil)
	if err != nil {
		return "", "", err
	}
	if len(paths) == 0 {
		t, err := s.writeTree(ctx, env)
		return t, idx, err
	}
	known := map[string]bool{}
	for _, which := range [][]string{scan, env} {
		entries, err := s.listPaths(ctx, which, call{args: []string{"ls-files", "-z"}, paths: paths, dashdash: true})
		if err != nil {
			return "", "", err
		}
		for _, e := range entries {
			for d := e; d != "." && d != "/" && d != ""; d = path.Dir(d) {
				if known[d] {
					break
				}
				known[d] = true
			}
		}
	}
	var add []string
	for _, p := range paths {
		if known[p] {
			add = append(add, p)
		} else if _, err := os.Lstat(filepath.Join(s.rc.path, filepath.FromSlash(p))); err == nil {
			add = append(add, p)
		}
	}
	if err := s.addPaths(ctx, scan, add); err != nil {
		return "", "", err
	}
	// HEAD's entries under the paths go; the scanned ones take their place.
	if _, err := s.run(ctx, call{args: []string{"rm", "--cached", "-r", "-q", "--ignore-unmatch", "--pathspec-from-file=-", "--pathspec-file-nul"},
		env: env, stdin: nulList(paths)}); err != nil {
		return "", "", err
	}
	res, err := s.run(ctx, call{args: []string{"ls-files", "-s", "-z"}, paths: paths, dashdash: true, env: scan})
	if err != nil {
		return "", "", err
	}
	if len(res.out) > 0 {
		if _, err := s.run(ctx, call{args: []string{"update-index", "-z", "--index-info"}, env: env, stdin: res.out}); err != nil {
			return "", "", err
		}
	}
	// In a plan, files an earlier step changed hold what it leaves.
	var over []string
	for f := range s.overlaid {
		for _, p := range paths {
			if f == p || strings.HasPrefix(f, p+"/") || p == "." {
				over = append(over, f)
				break
			}
		}
	}
	slices.Sort(over)
	if err := s.applyOverlay(ctx, env, over); err != nil {
		return "", "", err
	}
	t, err := s.writeTree(ctx, env)
	return t, idx, err
}

// checkSealed refuses to run a proposal whose outcome was never sealed
// (what would land was never shown), and one whose sealed objects are
// gone.
func (r *run) checkSealed(ctx context.Context) error {
	s := r.p.Sealed
	if s == nil {
		return errcode.New(errcode.Unsupported, "the proposal has no sealed outcome, so what it would change was never shown; nothing was run. Propose it again")
	}
	var trees []string
	for _, x := range append([]proposal.Sealed{*s}, s.Steps...) {
		for _, t := range []string{x.Before, x.After} {
			if t != "" {
				trees = append(trees, t)
			}
		}
	}
	if len(trees) == 0 {
		return nil
	}
	var in bytes.Buffer
	for _, t := range trees {
		in.WriteString(t + "\n")
	}
	res, err := r.main.g.run(ctx, call{dir: r.main.path, args: []string{"cat-file", "--batch-check=%(objecttype)"}, stdin: in.Bytes()})
	if err != nil {
		return err
	}
	for _, l := range strings.Split(res.text(), "\n") {
		if l != "tree" {
			return errcode.New(errcode.StaleBase, "the sealed outcome's objects are no longer in the repository (%s); nothing was run. Propose it again", proposal.SealedRef(r.p.ID))
		}
	}
	return nil
}
