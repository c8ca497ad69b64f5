package apply

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
)

// A session's commit brings the person's checkout along (see
// ops_session.go). Which files it writes is decided twice, the same way:
// when the proposal is sealed (what the card shows) and when it runs
// (which must still hold, or nothing runs). Each path the commit changes
// is written, kept as it is, or blocked:
//
//   - kept: the person has work in it that git shows (staged or unstaged
//     changes), or that git is told not to look at (assume-unchanged,
//     skip-worktree, or core.ignoreStat), or a submodule is checked out
//     there. Nothing is written there.
//   - blocked: writing it would overwrite or delete a file git does not
//     track (untracked or ignored, a .env, say), or a file of the
//     person's stands where the commit needs a directory, or a directory
//     of theirs with files in it where the commit needs a file. The
//     proposal is refused; nothing is ever deleted to make room.
//   - written: everything else. It is exactly as HEAD has it, and nothing
//     of the person's is in its way.

// treeEntry is a path's entry in a tree: mode and blob, mode "" when
// the tree has nothing there.
type treeEntry struct{ mode, blob string }

// pathChange is what a commit does at one path of the checkout.
type pathChange struct {
	path string
	// before is the path's entry in the commit's parent, after in the
	// commit.
	before, after treeEntry
}

func (c *pathChange) deleted() bool { return c.after.mode == "" }

// pathChanges says what files do at each path they name: a rename
// removes its old path and adds its new one.
func pathChanges(files []proposal.FileChange) map[string]*pathChange {
	out := map[string]*pathChange{}
	at := func(p string) *pathChange {
		if out[p] == nil {
			out[p] = &pathChange{path: p}
		}
		return out[p]
	}
	for _, f := range files {
		// A path can be named twice (a rename's old path, added again):
		// one change says what was there, the other what will be.
		from := f.Path
		if f.OldPath != "" {
			from = f.OldPath
		}
		if f.OldMode != "" {
			at(from).before = treeEntry{f.OldMode, f.OldBlob}
		} else {
			at(from)
		}
		if f.Status != proposal.FileDeleted {
			at(f.Path).after = treeEntry{f.Mode, f.Blob}
		}
	}
	return out
}

// keepKind is why a path the commit changes is kept as it is.
type keepKind int

const (
	keepUnstaged keepKind = iota + 1
	keepStaged
	keepAssumed
	keepSkipped
	keepSubmodule
	keepUnstatted
)

var keepWhy = map[keepKind]string{
	keepUnstaged:  "you have uncommitted changes to it; it stays as it is, so after the commit it shows as your change against it",
	keepStaged:    "you have staged changes to it; they stay staged, and the file stays as it is",
	keepAssumed:   "it is marked assume-unchanged in your index, so git does not show whether you changed it; it stays as it is, and keeps the mark",
	keepSkipped:   "it is marked skip-worktree in your index (a sparse checkout, say); it stays as it is, and keeps the mark",
	keepSubmodule: "a submodule is checked out there, and Sluice does not change a submodule's checkout; it stays as it is",
	keepUnstatted: "core.ignoreStat is set, so git cannot tell whether you changed it; it stays as it is, so after the commit any change of yours shows against it",
}

// checkoutPlan is what approving a session's commit does in the person's
// checkout.
type checkoutPlan struct {
	changes map[string]*pathChange
	// write lists, sorted, the paths written with the committed content
	// (or removed).
	write []string
	// keep holds each kept path with why.
	keep map[string]keepKind
	// blocked maps a path that cannot be written to the person's files in
	// its way.
	blocked map[string][]string
	// index is what the person's index keeps through the commit.
	index indexKeep
}

// indexKeep is what the person's index keeps through a session's commit:
// what they staged stays staged, and the assume-unchanged and
// skip-worktree marks of the other paths are set again on the entries
// the commit updates (git drops them with the old entry).
type indexKeep struct {
	staged, assumed, skipped []string
}

// statusOf is one record of `git status --porcelain=v1 -z --no-renames`.
type statusOf struct{ x, y byte }

// planCheckout plans the checkout of a commit that changes files. It
// reads only: git status and ls-files (readCheckoutState), and the file
// system.
func (r *run) planCheckout(ctx context.Context, files []proposal.FileChange) (*checkoutPlan, error) {
	plan := &checkoutPlan{changes: pathChanges(files), keep: map[string]keepKind{}, blocked: map[string][]string{}}
	if len(plan.changes) == 0 {
		return plan, nil
	}
	paths := make([]string, 0, len(plan.changes))
	for p := range plan.changes {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	rc := r.main
	wt := rc.main()
	st, ls, err := rc.readCheckoutState(ctx, paths)
	if err != nil {
		return nil, err
	}
	tracked, untracked := parseStatusZ(st)
	tags, indexed := parseLsFilesV(ls)
	unstatted, _ := rc.repo.Config("core.ignoreStat")
	var candidates []*pathChange
	for _, p := range paths {
		c := plan.changes[p]
		tag, inIndex := tags[p]
		s, changed := tracked[p]
		if changed && s.x != ' ' {
			plan.index.staged = append(plan.index.staged, p)
		}
		switch {
		case c.before.mode == proposal.ModeGitlink && populated(wt, p):
			// The person's submodule, checked out: its files are not the
			// superproject's to write or remove. (A directory with files
			// where the commit adds a gitlink is in the way, below.)
			plan.keep[p] = keepSubmodule
		case inIndex && (tag == 'S' || tag == 's'):
			plan.keep[p] = keepSkipped
		case inIndex && tag >= 'a' && tag <= 'z':
			plan.keep[p] = keepAssumed
		case inIndex && configTrue(unstatted):
			plan.keep[p] = keepUnstatted
		case changed && s.x != ' ':
			plan.keep[p] = keepStaged
		case changed:
			plan.keep[p] = keepUnstaged
		default:
			candidates = append(candidates, c)
			continue
		}
		if !slices.Contains(plan.index.staged, p) && inIndex {
			if tag == 'S' || tag == 's' {
				plan.index.skipped = append(plan.index.skipped, p)
			}
			if tag >= 'a' && tag <= 'z' {
				plan.index.assumed = append(plan.index.assumed, p)
			}
		}
	}
	// A file the commit removes makes room for a directory, and a
	// directory it empties for a file, only when that removal is written
	// too.
	removing := map[string]bool{}
	for _, c := range candidates {
		if c.deleted() {
			removing[c.path] = true
		}
	}
	for _, c := range candidates {
		if in := blockers(wt, c, untracked, indexed, tags, removing); len(in) > 0 {
			plan.blocked[c.path] = in
			continue
		}
		plan.write = append(plan.write, c.path)
	}
	return plan, nil
}

// readCheckoutState runs git status and git ls-files -v on paths with the
// read profile (no optional lock, no fsmonitor, nothing the repository
// configures is run).
func (rc *repoCtx) readCheckoutState(ctx context.Context, paths []string) (status, lsFiles []byte, err error) {
	// Each path as a pathspec matches what is under it too: a directory
	// the commit replaces by a file is seen whole. --ignored=matching
	// names an ignored directory by itself ("build/") and an ignored
	// file in a directory that is not ignored by itself.
	st, err := rc.g.run(ctx, call{dir: rc.path, profile: gitx.ProfileRead,
		args: []string{"status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored=matching", "--no-renames", "--ignore-submodules=dirty"}, paths: paths, dashdash: true})
	if err != nil {
		return nil, nil, err
	}
	// git status hides a file marked assume-unchanged or skip-worktree;
	// ls-files -v tags it (lowercase, S).
	ls, err := rc.g.run(ctx, call{dir: rc.path, profile: gitx.ProfileRead, args: []string{"ls-files", "-v", "-z"}, paths: paths, dashdash: true})
	if err != nil {
		return nil, nil, err
	}
	return st.out, ls.out, nil
}

// parseStatusZ reads `git status --porcelain=v1 -z --no-renames`: the
// status of each tracked path that changed, and the untracked and
// ignored paths.
func parseStatusZ(out []byte) (tracked map[string]statusOf, untracked []string) {
	tracked = map[string]statusOf{}
	for _, e := range strings.Split(string(out), "\x00") {
		if len(e) < 4 {
			continue
		}
		if e[0] == '?' || e[0] == '!' {
			untracked = append(untracked, e[3:])
		} else {
			tracked[e[3:]] = statusOf{e[0], e[1]}
		}
	}
	return tracked, untracked
}

// parseLsFilesV reads `git ls-files -v -z`: each indexed path's tag and
// the indexed paths in order.
func parseLsFilesV(out []byte) (tags map[string]byte, indexed []string) {
	tags = map[string]byte{}
	for _, e := range strings.Split(string(out), "\x00") {
		if len(e) >= 3 && e[1] == ' ' {
			tags[e[2:]] = e[0]
			indexed = append(indexed, e[2:])
		}
	}
	return tags, indexed
}

// blockers lists what of the person's stands in the way of writing c:
// untracked or ignored files at its path, under it or around it; index
// entries under it that the commit does not remove; a file (or symlink)
// where it needs a directory; a directory with files in it where it needs
// a file.
func blockers(wt worktree, c *pathChange, untracked, indexed []string, tags map[string]byte, removing map[string]bool) []string {
	p := c.path
	_, inIndex := tags[p]
	var in []string
	add := func(q string) {
		if q = strings.TrimSuffix(q, "/"); !slices.Contains(in, q) {
			in = append(in, q)
		}
	}
	for _, q := range untracked {
		switch {
		case q == p || strings.HasPrefix(q, p+"/"):
			add(q)
		case strings.HasSuffix(q, "/") && strings.HasPrefix(p, q) && !inIndex:
			// p itself is inside an untracked or ignored directory.
			add(q)
		}
	}
	for _, q := range indexed {
		if strings.HasPrefix(q, p+"/") && !removing[q] {
			add(q)
		}
	}
	full := filepath.Join(wt.path, filepath.FromSlash(p))
	if !c.deleted() {
		switch at := standing(wt, p); {
		case at == "":
		case at != p:
			if !removing[at] {
				add(at)
			}
		default:
			if fi, err := os.Lstat(full); err == nil && fi.IsDir() {
				for _, q := range filesUnder(wt, p, removing, 20) {
					add(q)
				}
			} else if !inIndex {
				add(p)
			}
		}
	} else if fi, err := os.Lstat(full); err == nil && fi.IsDir() {
		for _, q := range filesUnder(wt, p, removing, 20) {
			add(q)
		}
	}
	slices.Sort(in)
	return in
}

// filesUnder lists up to limit files (anything but a directory) under the
// directory p of the worktree that are not in allowed; p itself when it
// cannot be read whole.
func filesUnder(wt worktree, p string, allowed map[string]bool, limit int) []string {
	var out []string
	root := filepath.Join(wt.path, filepath.FromSlash(p))
	err := filepath.WalkDir(root, func(q string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(wt.path, q)
		if err != nil {
			return err
		}
		if rel = filepath.ToSlash(rel); !allowed[rel] {
			out = append(out, rel)
		}
		if len(out) >= limit {
			return fs.SkipAll
		}
		return nil
	})
	if err != nil && len(out) == 0 {
		out = append(out, p)
	}
	return out
}

// populated reports whether the worktree has a directory with something
// in it at p (a submodule's checkout).
func populated(wt worktree, p string) bool {
	ents, err := os.ReadDir(filepath.Join(wt.path, filepath.FromSlash(p)))
	return err == nil && len(ents) > 0
}

// notes is Sealed.Keeps: each kept path with why, sorted.
func (p *checkoutPlan) notes() []string {
	var out []string
	for path, k := range p.keep {
		out = append(out, path+": "+keepWhy[k])
	}
	slices.Sort(out)
	return out
}

// refuseBlocked refuses, at sealing, a commit that cannot be written
// without overwriting or deleting files of the person's.
func (p *checkoutPlan) refuseBlocked(wt worktree) error {
	if len(p.blocked) == 0 {
		return nil
	}
	var paths, files []string
	for path, in := range p.blocked {
		paths = append(paths, path)
		files = appendNew(files, in...)
	}
	slices.Sort(paths)
	slices.Sort(files)
	return &errcode.Error{Code: errcode.DirtyWorktree, Data: map[string]any{"worktree": wt.path, "files": limitList(files, 50), "paths": limitList(paths, 50)},
		Msg: fmt.Sprintf("the commit changes %s, and your checkout has files there that git does not track (untracked or ignored) or that are in the way: %s. Sluice never overwrites or deletes them to make room; move them away, then propose again. Nothing was changed",
			strings.Join(limitList(paths, 20), ", "), strings.Join(limitList(files, 20), ", "))}
}

// unwritable lists the paths of checkout (what the card said approving
// writes) that the plan no longer writes: the person touched them, or
// put something in their way, since the card was made.
func (p *checkoutPlan) unwritable(checkout []string) []string {
	var out []string
	for _, c := range checkout {
		if !slices.Contains(p.write, c) {
			out = append(out, c)
		}
	}
	return out
}

// requireWritable refuses, before anything is written, a session commit
// whose checkout files changed since the card was made.
func (p *checkoutPlan) requireWritable(checkout []string) error {
	changed := p.unwritable(checkout)
	if len(changed) == 0 {
		return nil
	}
	var files []string
	for _, c := range changed {
		files = appendNew(files, p.blocked[c]...)
	}
	return &errcode.Error{Code: errcode.StaleBase, Data: map[string]any{"changed": changed, "files": files},
		Msg: fmt.Sprintf("%s changed in your checkout since it was proposed, and the card said approving writes it; nothing was changed", strings.Join(limitList(changed, 20), ", "))}
}

// resetPaths are the paths whose index entries a commit of sealed sets
// to the commit's: all it changes but what the person staged.
func (k *indexKeep) resetPaths(sealed *proposal.Sealed) []string {
	var staged []string
	if k != nil {
		staged = k.staged
	}
	return slices.DeleteFunc(sealed.SealedPaths(), func(p string) bool { return slices.Contains(staged, p) })
}

// mark sets the assume-unchanged and skip-worktree marks again on the
// index entries of those paths that exist (in the tree the index entries
// were just set from).
func (k *indexKeep) mark(ctx context.Context, rc *repoCtx, exists func(string) bool) error {
	if k == nil {
		return nil
	}
	for _, m := range []struct {
		flag  string
		paths []string
	}{{"--assume-unchanged", k.assumed}, {"--skip-worktree", k.skipped}} {
		paths := slices.DeleteFunc(slices.Clone(m.paths), func(p string) bool { return !exists(p) })
		if len(paths) == 0 {
			continue
		}
		if _, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"update-index", m.flag, "-z", "--stdin"}, stdin: nulList(paths)}); err != nil {
			return err
		}
	}
	return nil
}

// checkoutWrite is what writing a checkout did, for taking it back.
type checkoutWrite struct {
	// created are the directories the writes made.
	created []string
	// touched are the paths of the checkout the writing removed or wrote
	// (or may have: a git checkout-index that failed halfway); nothing
	// else is the commit's to put back.
	touched []string
}

// writeCheckout brings the person's checkout to the commit for the files
// the card named: the index already holds the commit's entries for them
// (commitSealed), so they are checked out from it, and the deleted ones
// removed. It deletes nothing but a file the plan found as HEAD has it,
// or an empty directory: git checkout-index runs without --force, which
// would remove a whole directory in its way.
func (r *run) writeCheckout(ctx context.Context, sealed *proposal.Sealed) (*checkoutWrite, error) {
	out := &checkoutWrite{}
	if len(sealed.Checkout) == 0 {
		return out, nil
	}
	rc := r.main
	changes := pathChanges(sealed.Files)
	var removes, writes []string
	for _, p := range sealed.Checkout {
		c := changes[p]
		switch {
		case c == nil:
			return out, errcode.New(errcode.Internal, "the card names %s for the checkout, which the commit does not change", p)
		case c.deleted():
			removes = append(removes, p)
		default:
			writes = append(writes, p)
		}
	}
	// Each file must still be as the commit's parent has it: the person,
	// or a hook of theirs that ran for the commit, may have written there
	// since the check. (A directory is never deleted with anything in it:
	// makeRoom refuses it.)
	now, err := r.onDiskAt(ctx, sealed.Checkout)
	if err != nil {
		return out, err
	}
	rules := r.diskRules()
	var changed []string
	for _, p := range sealed.Checkout {
		if now[p].mode != "dir" && !now[p].holds(changes[p].before, rules) {
			changed = append(changed, p)
		}
	}
	if len(changed) > 0 {
		return out, &errcode.Error{Code: errcode.StaleBase, Data: map[string]any{"changed": changed},
			Msg: fmt.Sprintf("%s changed in your checkout while the commit was made (a hook of yours, say), and the card said approving writes it; Sluice does not overwrite it", strings.Join(limitList(changed, 20), ", "))}
	}
	// Removals first: a directory the commit replaces by a file is
	// emptied before the file is written, and a file it replaces by a
	// directory is gone before the directory is made. A directory a
	// removal leaves empty goes too, as git's own checkout does.
	for _, p := range removes {
		if err := makeRoom(rc.path, p); err != nil {
			return out, err
		}
		out.touched = append(out.touched, p)
		pruneEmpty(rc.path, path.Dir(p), nil)
	}
	for _, p := range writes {
		out.created = appendNew(out.created, missingDirs(rc.path, p)...)
	}
	for _, p := range writes {
		if err := makeRoom(rc.path, p); err != nil {
			return out, err
		}
		out.touched = append(out.touched, p)
	}
	if len(writes) > 0 {
		if _, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"checkout-index", "--index", "-z", "--stdin"}, stdin: nulList(writes)}); err != nil {
			return out, err
		}
	}
	r.note("updated %s in the checkout to the committed content", proposal.Count(len(sealed.Checkout), "file"))
	return out, nil
}

// makeRoom removes what stands at p before the executor writes or
// removes it: a file or symlink (which the plan found as HEAD has it) or
// an empty directory. A directory with anything in it is refused, never
// deleted.
func makeRoom(root, p string) error {
	full := filepath.Join(root, filepath.FromSlash(p))
	fi, err := os.Lstat(full)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.Remove(full); err != nil {
		if fi.IsDir() {
			return &errcode.Error{Code: errcode.DirtyWorktree, Err: err, Data: map[string]any{"worktree": root, "files": []string{p}},
				Msg: fmt.Sprintf("%s in your checkout became a directory with files in it after the checks, where the commit writes a file; Sluice does not delete it", p)}
		}
		return err
	}
	return nil
}

// pruneEmpty removes dir and its parents while they are empty
// directories, up to the worktree's root; with only set, only those.
func pruneEmpty(root, dir string, only []string) {
	for ; dir != "." && dir != "/" && dir != ""; dir = path.Dir(dir) {
		if only != nil && !slices.Contains(only, dir) {
			return
		}
		full := filepath.Join(root, filepath.FromSlash(dir))
		if fi, err := os.Lstat(full); err != nil || !fi.IsDir() || os.Remove(full) != nil {
			return
		}
	}
}

// missingDirs lists the directories writing p makes: its parents that do
// not exist.
func missingDirs(root, p string) []string {
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		d := strings.Join(parts[:i], "/")
		if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(d))); err != nil {
			var out []string
			for j := i; j < len(parts); j++ {
				out = append(out, strings.Join(parts[:j], "/"))
			}
			return out
		}
	}
	return nil
}

// takeBack undoes a session's commit whose checkout could not be written
// (cause): the branch goes back by compare-and-swap, so nothing newer is
// lost; each file the writing changed gets its content from before the
// commit again, and the directories it made go; the index entries of
// the commit's paths are as they were. Nothing is deleted that is not
// the commit's own content. The error is cause's, saying what was put
// back.
func (r *run) takeBack(ctx context.Context, w *writing, sym, old, sha string, sealed *proposal.Sealed, keep *indexKeep, wr *checkoutWrite, cause error) error {
	rc := r.main
	ref := sym
	if ref == "" {
		ref = "HEAD"
	}
	code, data := errcode.Of(cause), any(nil)
	if e, ok := errcode.As(cause); ok {
		data = e.Data
	}
	// Only Sluice's own commit is taken back: when a hook of the person's
	// committed on top of it, it stays, and so do the hook's commits.
	if tip := r.expect["HEAD"]; tip != sha {
		return &errcode.Error{Code: code, Err: cause, Data: data,
			Msg: fmt.Sprintf("%v; needs reconciliation: the commit %s landed but its files could not all be written, and commits were made on top of it (%s is at %s), so Sluice took nothing back: restore point %s holds the state before it",
				cause, short(sha), branchName(sym), short(tip), r.p.ID)}
	}
	if err := r.cas(ctx, rc, ref, old, sha, "sluice: undo a commit whose checkout could not be written"); err != nil {
		return &errcode.Error{Code: code, Err: cause, Data: data,
			Msg: fmt.Sprintf("%v; needs reconciliation: the commit %s landed but its files could not all be written, and it could not be taken back (%v): restore point %s holds the state before it", cause, short(sha), err, r.p.ID)}
	}
	delete(w.left[rc].movedHeads, rc.path)
	r.moved(rc, ref, old, true)
	left := r.unwriteCheckout(ctx, sealed, wr)
	changes := pathChanges(sealed.Files)
	if paths := keep.resetPaths(sealed); len(paths) > 0 {
		_, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"reset", "--quiet", "--no-refresh", old, "--pathspec-from-file=-", "--pathspec-file-nul"}, stdin: nulList(paths)})
		if err == nil {
			err = keep.mark(ctx, rc, func(p string) bool { return changes[p] != nil && changes[p].before.mode != "" })
		}
		if err != nil {
			r.e.log.Error("apply: could not put the index back after taking a commit back", "err", err)
			left = append(left, "the index")
		}
	}
	if len(left) > 0 {
		return &errcode.Error{Code: code, Err: cause, Data: data,
			Msg: fmt.Sprintf("%v; the commit was taken back, but not all of the checkout could be put back (%s): restore point %s holds the state before it", cause, strings.Join(limitList(left, 10), ", "), r.p.ID)}
	}
	// Only a hook of the person's, which ran for the commit, may have
	// changed anything now; then the restore point stays.
	r.changed = rc.hasHooks(ctx, commitHooks)
	return &errcode.Error{Code: code, Err: cause, Data: data,
		Msg: fmt.Sprintf("%v; the commit was taken back, and your branch, index and files are as they were", cause)}
}

// unwriteCheckout puts each path of the card's checkout back as the
// commit's parent has it, where it now holds the commit's content (or
// nothing), and removes the directories writing made. Anything else is
// someone else's and stays; the paths whose content from before cannot
// come back because of it are listed.
func (r *run) unwriteCheckout(ctx context.Context, sealed *proposal.Sealed, wr *checkoutWrite) []string {
	rc := r.main
	changes := pathChanges(sealed.Files)
	rules := r.diskRules()
	cur, err := r.onDiskAt(ctx, sealed.Checkout)
	if err != nil {
		r.e.log.Error("apply: could not read the checkout to put it back", "err", err)
		return sealed.Checkout
	}
	var left, restore []string
	for _, p := range sealed.Checkout {
		if !slices.Contains(wr.touched, p) {
			// Never written: what is there is as it was, or the person's.
			continue
		}
		c, now := changes[p], cur[p]
		switch {
		case now.holds(c.before, rules):
		case now.mode == "" || now.holds(c.after, rules):
			if now.mode != "" {
				if err := os.Remove(filepath.Join(rc.path, filepath.FromSlash(p))); err != nil {
					left = append(left, p)
					continue
				}
			}
			if c.before.mode != "" {
				restore = append(restore, p)
			}
		case c.before.mode == "":
			// Something that is not the commit's, where there was
			// nothing: the person's, put there meanwhile. It stays.
		default:
			left = append(left, p)
		}
	}
	created := slices.Clone(wr.created)
	slices.SortFunc(created, func(a, b string) int { return len(b) - len(a) })
	for _, d := range created {
		pruneEmpty(rc.path, d, wr.created)
	}
	if len(restore) == 0 {
		return left
	}
	tmp, err := os.MkdirTemp("", "sluice-unwrite-")
	if err != nil {
		return append(left, restore...)
	}
	defer os.RemoveAll(tmp)
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}
	if _, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"read-tree"}, revs: []string{sealed.Before}, env: env}); err != nil {
		return append(left, restore...)
	}
	if _, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"checkout-index", "-z", "--stdin"}, env: env, stdin: nulList(restore)}); err != nil {
		r.e.log.Error("apply: could not put files back after taking a commit back", "err", err)
		return append(left, restore...)
	}
	return left
}

// onDisk is what a path of the checkout holds: mode is the tree mode it
// would have (100644, 100755, 120000), "dir" for a directory with
// something in it, "other" for anything else, "" for nothing or an empty
// directory; blob is a file's as git add would hash it (its attributes'
// conversions, no filter), a symlink's by its target.
type onDisk struct{ mode, blob string }

// diskRules are the person's settings that say how a tree entry looks on
// their disk.
type diskRules struct {
	// fileMode: git tracks the executable bit (core.fileMode).
	fileMode bool
	// symlinks: a symlink is one, not a file holding its target
	// (core.symlinks).
	symlinks bool
}

func (r *run) diskRules() diskRules {
	on := func(key string) bool {
		v, ok := r.main.repo.Config(key)
		return !ok || configTrue(v)
	}
	return diskRules{fileMode: on("core.fileMode"), symlinks: on("core.symlinks")}
}

// holds reports whether d is what tree entry e puts on disk under rules:
// nothing for no entry, a directory or nothing for a gitlink (a checked
// out or empty submodule), else the same blob as the same kind of file.
func (d onDisk) holds(e treeEntry, rules diskRules) bool {
	switch {
	case e.mode == proposal.ModeGitlink:
		return d.mode == "" || d.mode == "dir"
	case e.mode == "" || d.mode == "":
		return e.mode == d.mode
	case d.blob != e.blob:
		return false
	case e.mode == proposal.ModeSymlink && !rules.symlinks:
		return d.mode == proposal.ModeFile || d.mode == proposal.ModeExecutable
	case e.mode == proposal.ModeSymlink || d.mode == proposal.ModeSymlink:
		return e.mode == d.mode
	}
	return d.mode == e.mode || !rules.fileMode
}

// onDiskAt reads what each path holds in the checkout: one git process
// hashes the regular files.
func (r *run) onDiskAt(ctx context.Context, paths []string) (map[string]onDisk, error) {
	rc := r.main
	out := map[string]onDisk{}
	var regular []string
	for _, p := range paths {
		full := filepath.Join(rc.path, filepath.FromSlash(p))
		fi, err := os.Lstat(full)
		switch {
		case err != nil:
			out[p] = onDisk{}
		case fi.IsDir():
			if populated(rc.main(), p) {
				out[p] = onDisk{mode: "dir"}
			} else {
				out[p] = onDisk{}
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(full)
			if err != nil {
				return nil, err
			}
			out[p] = onDisk{mode: proposal.ModeSymlink, blob: blobID(rc.repo.ObjectFormat, []byte(target))}
		case fi.Mode().IsRegular() && !strings.ContainsAny(p, "\n\r"):
			mode := proposal.ModeFile
			if fi.Mode()&0o111 != 0 {
				mode = proposal.ModeExecutable
			}
			out[p] = onDisk{mode: mode}
			regular = append(regular, p)
		default:
			out[p] = onDisk{mode: "other"}
		}
	}
	if len(regular) == 0 {
		return out, nil
	}
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"hash-object", "--stdin-paths"}, stdin: []byte(strings.Join(regular, "\n") + "\n")})
	if err != nil {
		return nil, err
	}
	ids := strings.Fields(res.text())
	if len(ids) != len(regular) {
		return nil, errcode.New(errcode.GitFailed, "git hash-object gave an unexpected answer")
	}
	for i, p := range regular {
		d := out[p]
		d.blob = ids[i]
		out[p] = d
	}
	return out, nil
}

// blobID is the object id git gives a blob of data.
func blobID(format string, data []byte) string {
	var h hash.Hash
	if format == "sha256" {
		h = sha256.New()
	} else {
		h = sha1.New()
	}
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}
