package apply

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/core/apply/internal/gitrun"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/restorepoint"
)

// head is where a worktree's HEAD is.
type head struct {
	// sym is the branch HEAD points to ("refs/heads/main"), or "" when
	// HEAD is detached.
	sym  string
	sha  string
	tree string
}

// headOf reads the HEAD of the worktree at dir in one process.
func (g *gitEnv) headOf(ctx context.Context, dir string) (head, error) {
	h, err := g.git.HeadOf(ctx, dir)
	return headFrom(h), err
}

// parseHead reads the answer of `git rev-parse HEAD HEAD^{tree}
// --symbolic-full-name HEAD`.
func parseHead(lines []string) (head, error) {
	h, err := gitrun.ParseHead(lines)
	return headFrom(h), err
}

func headFrom(h gitrun.Head) head { return head{sym: h.Sym, sha: h.SHA, tree: h.Tree} }

// worktree is one working tree the executor reads or changes.
type worktree struct {
	path   string
	gitDir string
}

// status is `git status --porcelain=v1 -z` of the worktree, untracked
// files included (ignored files do not count; dirty submodule contents do
// not either, since no snapshot can hold them). It never writes: status
// runs without optional locks. Before the operation changes anything, the
// answer is cached (see readCache).
func (rc *repoCtx) status(ctx context.Context, wt worktree) ([]byte, error) {
	if out, ok := rc.reads.statusOf(wt.path); ok {
		return out, nil
	}
	res, err := rc.g.run(ctx, call{dir: wt.path, args: []string{"status", "--porcelain=v1", "-z", "--untracked-files=normal", "--ignore-submodules=dirty"}})
	if err != nil {
		return nil, err
	}
	rc.reads.putStatus(wt.path, res.out)
	return res.out, nil
}

// clean reports whether the worktree has no staged, unstaged or untracked
// changes.
func (rc *repoCtx) clean(ctx context.Context, wt worktree) (bool, error) {
	out, err := rc.status(ctx, wt)
	return len(out) == 0, err
}

// dirtyTracked lists tracked paths with staged or unstaged changes
// (untracked files are allowed), capped at 20.
func (rc *repoCtx) dirtyTracked(ctx context.Context, wt worktree) ([]string, error) {
	out, err := rc.trackedStatus(ctx, wt)
	if err != nil {
		return nil, err
	}
	var paths []string
	recs := strings.Split(string(out), "\x00")
	for i := 0; i < len(recs); i++ {
		rec := recs[i]
		if len(rec) < 4 || strings.HasPrefix(rec, "?? ") {
			continue
		}
		paths = append(paths, rec[3:])
		if rec[0] == 'R' || rec[0] == 'C' {
			i++ // the rename's source follows
		}
		if len(paths) == 20 {
			break
		}
	}
	return paths, nil
}

// trackedStatus is a status that answers for tracked files: the full
// status when this moment has one, or will want one (a whole-tree
// restore point of wt follows, see readCache.wantFull); otherwise `git
// status --untracked-files=no`, which checks the index's stat data and
// walks no directory for untracked files.
func (rc *repoCtx) trackedStatus(ctx context.Context, wt worktree) ([]byte, error) {
	if out, ok := rc.reads.statusOf(wt.path); ok {
		return out, nil
	}
	if rc.reads.wantsFull(wt.path) {
		return rc.status(ctx, wt)
	}
	if out, ok := rc.reads.trackedOf(wt.path); ok {
		return out, nil
	}
	res, err := rc.g.run(ctx, call{dir: wt.path, args: []string{"status", "--porcelain=v1", "-z", "--untracked-files=no", "--ignore-submodules=dirty"}})
	if err != nil {
		return nil, err
	}
	rc.reads.putTracked(wt.path, res.out)
	return res.out, nil
}

// headOf reads the HEAD of the worktree at dir, cached like status.
func (rc *repoCtx) headOf(ctx context.Context, dir string) (head, error) {
	if h, ok := rc.reads.headOf(dir); ok {
		return h, nil
	}
	h, err := rc.g.headOf(ctx, dir)
	if err == nil {
		rc.reads.putHead(dir, h)
	}
	return h, err
}

// readCache holds what the worktrees of a repository looked like at one
// moment: before an operation changed anything, or when a restore looks.
// Checking the pins, the checks and the restore point all look at that
// one moment, so they share one git process per question. The executor
// ends the cache before the operation's first write; a nil or ended
// cache caches nothing.
type readCache struct {
	heads  map[string]head
	status map[string][]byte
	// entries holds index entries at a scope's paths, by worktree and
	// paths (see indexEntries); listed holds `git ls-files -s -z` of
	// those paths as the intent-to-add check read them (see
	// refuseIntentToAdd), from which indexEntries picks them out.
	entries, listed map[string][]byte
	// tracked holds statuses without untracked files (see
	// trackedStatus); full marks the worktrees whose full status this
	// moment will want anyway.
	tracked map[string][]byte
	full    map[string]bool
}

func newReadCache() *readCache {
	return &readCache{heads: map[string]head{}, status: map[string][]byte{}, entries: map[string][]byte{},
		listed: map[string][]byte{}, tracked: map[string][]byte{}, full: map[string]bool{}}
}

// live reports whether the cache still caches.
func (c *readCache) live() bool { return c != nil && c.status != nil }

// end ends the moment and returns the statuses it saw.
func (c *readCache) end() map[string][]byte {
	if c == nil {
		return nil
	}
	seen := c.status
	c.heads, c.status, c.entries, c.listed, c.tracked, c.full = nil, nil, nil, nil, nil, nil
	return seen
}

// wantFull says that this moment will read the full status of the
// worktree at dir, so a check of its tracked files reads that one.
func (c *readCache) wantFull(dir string) {
	if c.live() {
		c.full[dir] = true
	}
}

func (c *readCache) wantsFull(dir string) bool { return c.live() && c.full[dir] }

func (c *readCache) trackedOf(dir string) ([]byte, bool) {
	if !c.live() {
		return nil, false
	}
	out, ok := c.tracked[dir]
	return out, ok
}

func (c *readCache) putTracked(dir string, out []byte) {
	if c.live() {
		c.tracked[dir] = out
	}
}

func (c *readCache) entriesOf(key string) ([]byte, bool) {
	if !c.live() {
		return nil, false
	}
	out, ok := c.entries[key]
	return out, ok
}

func (c *readCache) putEntries(key string, out []byte) {
	if c.live() {
		c.entries[key] = out
	}
}

func (c *readCache) listedOf(key string) ([]byte, bool) {
	if !c.live() {
		return nil, false
	}
	out, ok := c.listed[key]
	return out, ok
}

func (c *readCache) putListed(key string, out []byte) {
	if c.live() {
		c.listed[key] = out
	}
}

func (c *readCache) headOf(dir string) (head, bool) {
	if !c.live() {
		return head{}, false
	}
	h, ok := c.heads[dir]
	return h, ok
}

func (c *readCache) putHead(dir string, h head) {
	if c.live() {
		c.heads[dir] = h
	}
}

func (c *readCache) statusOf(dir string) ([]byte, bool) {
	if !c.live() {
		return nil, false
	}
	out, ok := c.status[dir]
	return out, ok
}

func (c *readCache) putStatus(dir string, out []byte) {
	if c.live() {
		c.status[dir] = out
	}
}

// trees is the content of a worktree's index and of its working tree
// (untracked files included, ignored files not) as tree ids.
type trees struct {
	index, files string
	// tmpIndex, when kept, is an index file describing the working tree;
	// the caller removes its directory.
	tmpIndex string
}

// treesOf records the index and, with files, the working tree as trees,
// on a copy of the index so that the person's index is never written.
// With persist the objects go to the repository (a restore point needs
// them); without it they go to a temporary object directory that is
// deleted, which leaves the repository exactly as it was.
func (g *gitEnv) treesOf(ctx context.Context, wt worktree, objectsDir string, files, persist, keepIndex bool) (trees, error) {
	tmp, err := os.MkdirTemp("", "sluice-snapshot-")
	if err != nil {
		return trees{}, err
	}
	keep := false
	defer func() {
		if !keep {
			os.RemoveAll(tmp)
		}
	}()
	idx := filepath.Join(tmp, "index")
	if err := gitx.CopyIndex(filepath.Join(wt.gitDir, "index"), idx); err != nil && !errors.Is(err, os.ErrNotExist) {
		return trees{}, err
	}
	env := []string{"GIT_INDEX_FILE=" + idx}
	if !persist {
		objs := filepath.Join(tmp, "objects")
		if err := os.Mkdir(objs, 0o700); err != nil {
			return trees{}, err
		}
		env = append(env, "GIT_OBJECT_DIRECTORY="+objs, "GIT_ALTERNATE_OBJECT_DIRECTORIES="+objectsDir)
	}
	var t trees
	res, err := g.run(ctx, call{dir: wt.path, args: []string{"write-tree"}, env: env})
	if err != nil {
		if strings.Contains(stderrOf(err), "unmerged") {
			return trees{}, errcode.New(errcode.OperationInProgress, "the index of %s has unresolved conflicts; resolve or abort them first", wt.path)
		}
		return trees{}, err
	}
	t.index = res.text()
	if !files {
		return t, nil
	}
	if _, err := g.run(ctx, call{dir: wt.path, args: []string{"add", "--all"}, env: env}); err != nil {
		return trees{}, err
	}
	if res, err = g.run(ctx, call{dir: wt.path, args: []string{"write-tree"}, env: env}); err != nil {
		return trees{}, err
	}
	t.files = res.text()
	if keepIndex {
		keep = true
		t.tmpIndex = idx
	}
	return t, nil
}

// depth is how much of a working tree an operation may change, and so
// how much of it a restore point records.
type depth int

const (
	// depthHead: HEAD only (a branch moved under a checkout by ref).
	depthHead depth = iota
	// depthIndex: HEAD and the index (a commit without hooks that could
	// touch files).
	depthIndex
	// depthFiles: HEAD, index and files, untracked files included.
	depthFiles
)

// depthOf is how much of the worktree w recorded.
func depthOf(w WorktreeState) depth {
	switch {
	case w.Files:
		return depthFiles
	case w.Index != "":
		return depthIndex
	}
	return depthHead
}

// keep is how much of a recorded worktree state stays in the repository.
type keep int

const (
	// keepNothing: the objects go to a temporary object directory that is
	// deleted; the repository is left exactly as it was. Reads use it.
	keepNothing keep = iota
	// keepObjects: the objects go to the repository (where the next git
	// command that hashes the same files finds them), but nothing refers
	// to them. The executor records end states this way.
	keepObjects
	// keepSnapshot: objects and a stash-shaped commit, and the temporary
	// index describing the files is kept for a restore.
	keepSnapshot
)

// stateOf records the worktree: its HEAD and, to depth, its index and
// files as trees. dirty says the worktree has changes for certain, so
// its files go straight to hashing.
//
// With paths (a scope, for depthFiles), only those paths of the index
// and of the working tree are recorded (see WorktreeState.Paths): no
// status, no walk of the working tree.
func (rc *repoCtx) stateOf(ctx context.Context, wt worktree, d depth, how keep, label string, dirty bool, paths []string) (WorktreeState, trees, error) {
	h, err := rc.headOf(ctx, wt.path)
	if err != nil {
		return WorktreeState{}, trees{}, err
	}
	st := WorktreeState{Path: wt.path, Head: h.sym, HeadSHA: h.sha, Files: d == depthFiles}
	s := stating{rc: rc, wt: wt, h: h, how: how, label: label, on: "(no branch)"}
	if h.sym != "" {
		s.on = strings.TrimPrefix(h.sym, "refs/heads/")
	}
	switch {
	case d == depthHead:
	case d == depthFiles && len(paths) > 0:
		err = s.pathsOfFiles(ctx, &st, paths)
	case d == depthIndex && len(paths) > 0:
		err = s.pathsOfIndex(ctx, &st, paths)
	case d == depthIndex:
		err = s.wholeIndex(ctx, &st)
	default:
		return s.wholeTree(ctx, st, dirty)
	}
	if err != nil {
		return WorktreeState{}, trees{}, err
	}
	return st, trees{}, nil
}

// stating is one worktree's state being recorded by stateOf: at HEAD h
// (on names its branch for the snapshot commits' messages), kept as how
// says.
type stating struct {
	rc        *repoCtx
	wt        worktree
	h         head
	how       keep
	label, on string
}

// snapshot commits index (on HEAD) and, when files is not "", the files
// (on HEAD and that index commit), stash-shaped: the snapshot's commit.
func (s stating) snapshot(ctx context.Context, index, files string) (string, error) {
	ic, err := s.rc.commitTree(ctx, index, []string{s.h.sha}, "index on "+s.on+": "+s.label)
	if err != nil || files == "" {
		return ic, err
	}
	return s.rc.commitTree(ctx, files, []string{s.h.sha, ic}, "WIP on "+s.on+": "+s.label)
}

// pathsOfFiles records the index entries and the files at paths alone.
func (s stating) pathsOfFiles(ctx context.Context, st *WorktreeState, paths []string) error {
	st.Paths = paths
	entries, err := s.rc.indexEntries(ctx, s.wt, paths)
	if err != nil {
		return err
	}
	if st.Index, st.Tree, err = s.rc.g.pathTrees(ctx, s.wt, s.rc.objectsDir(), paths, s.how != keepNothing, entries); err != nil {
		return err
	}
	if s.how == keepSnapshot {
		st.Snapshot, err = s.snapshot(ctx, st.Index, st.Tree)
	}
	return err
}

// pathsOfIndex records a scope of the index (a commit of known paths):
// the entries at those paths, no copy of the whole index.
func (s stating) pathsOfIndex(ctx context.Context, st *WorktreeState, paths []string) error {
	st.Paths = paths
	entries, err := s.rc.indexEntries(ctx, s.wt, paths)
	if err != nil {
		return err
	}
	if st.Index, err = s.rc.g.indexTree(ctx, s.rc.objectsDir(), s.wt, s.how != keepNothing, entries); err != nil {
		return err
	}
	if s.how == keepSnapshot {
		st.Snapshot, err = s.snapshot(ctx, st.Index, "")
	}
	return err
}

// wholeIndex records the whole index as a tree.
func (s stating) wholeIndex(ctx context.Context, st *WorktreeState) error {
	t, err := s.rc.g.treesOf(ctx, s.wt, s.rc.objectsDir(), false, s.how != keepNothing, false)
	if err != nil {
		return err
	}
	st.Index = t.index
	if s.how == keepSnapshot {
		st.Snapshot = s.h.sha
		if t.index != s.h.tree {
			st.Snapshot, err = s.snapshot(ctx, t.index, "")
		}
	}
	return err
}

// wholeTree records the whole index and working tree, untracked files
// included; a clean worktree (which dirty, when set, says it is not) is
// its HEAD.
func (s stating) wholeTree(ctx context.Context, st WorktreeState, dirty bool) (WorktreeState, trees, error) {
	clean := false
	if !dirty {
		var err error
		if clean, err = s.rc.clean(ctx, s.wt); err != nil {
			return WorktreeState{}, trees{}, err
		}
	}
	if clean {
		st.Index, st.Tree, st.Clean = s.h.tree, s.h.tree, true
		if s.how == keepSnapshot {
			st.Snapshot = s.h.sha
		}
		return st, trees{}, nil
	}
	t, err := s.rc.g.treesOf(ctx, s.wt, s.rc.objectsDir(), true, s.how != keepNothing, s.how == keepSnapshot)
	if err != nil {
		return WorktreeState{}, trees{}, err
	}
	st.Index, st.Tree = t.index, t.files
	if dirty {
		// No status said so: the trees tell whether it is clean after all.
		st.Clean = t.index == s.h.tree && t.files == s.h.tree
	}
	if s.how != keepSnapshot {
		return st, t, nil
	}
	if st.Snapshot, err = s.snapshot(ctx, t.index, t.files); err != nil {
		return WorktreeState{}, t, err
	}
	return st, t, nil
}

// pathTrees records the index entries and the files at paths of wt as
// two trees (restorepoint.PathTrees). With persist the objects go to the
// repository; without it to a temporary object directory that is deleted.
func (g *gitEnv) pathTrees(ctx context.Context, wt worktree, objectsDir string, paths []string, persist bool, entries []byte) (string, string, error) {
	tmp, err := os.MkdirTemp("", "sluice-snapshot-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(tmp)
	var objEnv []string
	if !persist {
		objs := filepath.Join(tmp, "objects")
		if err := os.Mkdir(objs, 0o700); err != nil {
			return "", "", err
		}
		objEnv = []string{"GIT_OBJECT_DIRECTORY=" + objs, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + objectsDir}
	}
	return restorepoint.PathTrees(ctx, g.inWorktree(wt), wt.path, tmp, paths, objEnv, entries)
}

// indexTree records index entries at a scope's paths as a tree
// (restorepoint.IndexTree), on a temporary index; with persist the
// objects go to the repository, without it to a temporary object
// directory that is deleted.
func (g *gitEnv) indexTree(ctx context.Context, objectsDir string, wt worktree, persist bool, entries []byte) (string, error) {
	tmp, err := os.MkdirTemp("", "sluice-snapshot-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	var objEnv []string
	if !persist {
		objs := filepath.Join(tmp, "objects")
		if err := os.Mkdir(objs, 0o700); err != nil {
			return "", err
		}
		objEnv = []string{"GIT_OBJECT_DIRECTORY=" + objs, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + objectsDir}
	}
	return restorepoint.IndexTree(ctx, g.inWorktree(wt), tmp, objEnv, entries)
}

// restoreIndexPaths puts the index entries at the paths of a scope of
// the index back as the tree index records them, and takes out of the
// index each of the paths it does not hold. Only those entries are
// written; the working tree is not touched, and every other entry keeps
// its stat data.
func (g *gitEnv) restoreIndexPaths(ctx context.Context, wt worktree, index string, paths []string) error {
	want, err := restorepoint.TreeEntries(ctx, g.inWorktree(wt), index)
	if err != nil {
		return err
	}
	var in bytes.Buffer
	for _, p := range paths {
		e := want[p]
		if e == "" {
			// Mode 0 removes the entry.
			e = "0 " + g.zero
		}
		fmt.Fprintf(&in, "%s\t%s\x00", e, p)
	}
	_, err = g.run(ctx, call{dir: wt.path, args: []string{"update-index", "-z", "--index-info"}, stdin: in.Bytes()})
	return err
}

// indexEntries are the index entries of wt at paths
// (restorepoint.IndexEntries), cached like status: the intent-to-add
// check, a restore point and the checks before it, or a restore's checks
// and its undo point, read the index once. Each git ls-files loads the
// whole index, whatever its pathspec.
func (rc *repoCtx) indexEntries(ctx context.Context, wt worktree, paths []string) ([]byte, error) {
	key := entriesKey(wt, paths)
	if out, ok := rc.reads.entriesOf(key); ok {
		return out, nil
	}
	git := rc.g.inWorktree(wt)
	if listed, ok := rc.reads.listedOf(key); ok {
		// What the intent-to-add check read at this moment, under the
		// same pathspecs: every entry at paths is in it, so
		// IndexEntries picks out the same entries as from a read of its
		// own (of the whole index too, past restorepoint's limit of
		// paths on a command line).
		git = func(context.Context, restorepoint.Call) ([]byte, error) { return listed, nil }
	} else if rc.entriesInProcess {
		if listed, ok := rc.g.listEntries(wt.gitDir, paths); ok {
			git = func(context.Context, restorepoint.Call) ([]byte, error) { return listed, nil }
		}
	}
	out, err := restorepoint.IndexEntries(ctx, git, paths)
	if err == nil {
		rc.reads.putEntries(key, out)
	}
	return out, err
}

// entriesKey is where readCache and effects keep the index entries of
// wt at paths.
func entriesKey(wt worktree, paths []string) string {
	return wt.path + "\x00" + strings.Join(paths, "\x00")
}

// inWorktree is g as restorepoint.Git, in the working tree wt.
func (g *gitEnv) inWorktree(wt worktree) restorepoint.Git {
	return func(ctx context.Context, c restorepoint.Call) ([]byte, error) {
		res, err := g.run(ctx, call{dir: wt.path, args: c.Args, revs: c.Revs, paths: c.Paths, env: c.Env, stdin: c.Stdin})
		return res.out, err
	}
}

// commitTree makes one of Sluice's own bookkeeping commits: Sluice's
// identity, never signed.
func (g *gitEnv) commitTree(ctx context.Context, dir, tree string, parents []string, msg string) (string, error) {
	args := []string{"commit-tree", "--no-gpg-sign"}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	res, err := g.run(ctx, call{dir: dir, args: args, revs: []string{tree}, stdin: []byte(msg + "\n"), env: sluiceIdentity})
	if err != nil {
		return "", err
	}
	return res.text(), nil
}

// restoreFiles makes the worktree's files and index those recorded in
// want. cur describes the worktree as it is now, with its index file kept
// (see treesOf); for a clean worktree it is empty and the real index is
// used, which then matches the files.
func (g *gitEnv) restoreFiles(ctx context.Context, wt worktree, want WorktreeState, cur trees) error {
	var env []string
	if cur.tmpIndex != "" {
		env = []string{"GIT_INDEX_FILE=" + cur.tmpIndex}
	}
	// --reset -u: every file of the current state that the recorded tree
	// lacks is removed, every other one is written as recorded.
	if _, err := g.run(ctx, call{dir: wt.path, args: []string{"read-tree", "--reset", "-u"}, revs: []string{want.Tree}, env: env}); err != nil {
		return err
	}
	return g.restoreIndex(ctx, wt, want.Index)
}

// restoreIndex makes the worktree's index the tree index, leaving its
// files as they are.
func (g *gitEnv) restoreIndex(ctx context.Context, wt worktree, index string) error {
	// --reset (a one-tree merge that drops unmerged entries) keeps the
	// stat data of every entry whose content stays, so the refresh after
	// it hashes only the files that changed, not the whole working tree.
	if _, err := g.run(ctx, call{dir: wt.path, args: []string{"read-tree", "--reset"}, revs: []string{index}}); err != nil {
		return err
	}
	_, err := g.run(ctx, call{dir: wt.path, args: []string{"update-index", "-q", "--refresh"}, ok: []int{1}})
	return err
}

// restorePaths puts the paths of a scoped state back (want.Paths): each
// file as want.Tree has it, or removed when it has none, and each index
// entry as want.Index has it. Only those paths are written; the index
// keeps the stat data of every other entry, so nothing else is read again.
//
// now, when not empty, is the scoped index tree of the same paths as they
// are now (the undo point's): with it, and when every recorded index
// entry is its file's content (the usual case: no staged work at those
// paths), one `git restore` writes the files and the index entries
// together, so the index is written once.
func (g *gitEnv) restorePaths(ctx context.Context, wt worktree, want WorktreeState, now string) error {
	git := g.inWorktree(wt)
	files, err := restorepoint.TreeEntries(ctx, git, want.Tree)
	if err != nil {
		return err
	}
	index, err := restorepoint.TreeEntries(ctx, git, want.Index)
	if err != nil {
		return err
	}
	if now != "" && maps.Equal(files, index) {
		return g.restoreSame(ctx, wt, want, files, now)
	}
	// First every path's index entry becomes its file's recorded content
	// (or its recorded index entry, or nothing, for a file that was not
	// there), so that checkout-index writes the files and records their
	// stat data; then the entries whose index content differed from the
	// file are set as recorded.
	var first, then, out bytes.Buffer
	entry := func(b *bytes.Buffer, modeSHA, path string) {
		if modeSHA == "" {
			modeSHA = "0 " + g.zero
		}
		fmt.Fprintf(b, "%s\t%s\x00", modeSHA, path)
	}
	var gone []string
	for _, p := range want.Paths {
		f, inFiles := files[p]
		ix := index[p]
		if !inFiles {
			entry(&first, ix, p)
			gone = append(gone, p)
			continue
		}
		entry(&first, f, p)
		out.WriteString(p)
		out.WriteByte(0)
		if ix != f {
			entry(&then, ix, p)
		}
	}
	if _, err := g.run(ctx, call{dir: wt.path, args: []string{"update-index", "-z", "--index-info"}, stdin: first.Bytes()}); err != nil {
		return err
	}
	if out.Len() > 0 {
		if _, err := g.run(ctx, call{dir: wt.path, args: []string{"checkout-index", "-f", "-u", "-q", "-z", "--stdin"}, stdin: out.Bytes()}); err != nil {
			return err
		}
	}
	for _, p := range gone {
		if err := removeFile(wt.path, p); err != nil {
			return err
		}
	}
	if then.Len() > 0 {
		if _, err := g.run(ctx, call{dir: wt.path, args: []string{"update-index", "-z", "--index-info"}, stdin: then.Bytes()}); err != nil {
			return err
		}
	}
	return nil
}

// restoreSame is restorePaths for a state whose index entries are its
// files (files): `git restore --source --staged --worktree` of the paths
// sets each index entry from the recorded tree, writes its file and
// records its stat data, and takes out of both a tracked path the tree
// does not hold; an untracked file at a path the tree does not hold is
// removed here. now is the scoped index tree as it is (the undo
// point's). When it holds the recorded entries already (a patch to the
// working tree leaves the index alone), the files alone are written where
// that leaves what git's restore would, checked again under the index's
// lock (see restoreAlone), and the index is not rewritten.
func (g *gitEnv) restoreSame(ctx context.Context, wt worktree, want WorktreeState, files map[string]string, now string) error {
	tracked, err := restorepoint.TreeEntries(ctx, g.inWorktree(wt), now)
	if err != nil {
		return err
	}
	if maps.Equal(tracked, files) {
		alone, err := g.restoreAlone(ctx, wt, want, files)
		if alone || err != nil {
			return err
		}
	}
	// A path in neither has no entry to remove, as the undo point read
	// the index; the person may have added one since (git add of a file
	// the patch created), which git's restore then takes out with the
	// file, as it sets back an entry staged since at a path it holds, and
	// as the end state records. The index is read again for those paths
	// alone: a pathspec that matches nothing fails git's restore.
	var untracked []string
	for _, p := range want.Paths {
		_, inTree := files[p]
		_, inIndex := tracked[p]
		if !inTree && !inIndex {
			untracked = append(untracked, p)
		}
	}
	since, err := g.entriesNow(ctx, wt, untracked)
	if err != nil {
		return err
	}
	var specs bytes.Buffer
	for _, p := range want.Paths {
		_, inTree := files[p]
		_, inIndex := tracked[p]
		if !inTree && !inIndex && !since[p] {
			if err := removeFile(wt.path, p); err != nil {
				return err
			}
			continue
		}
		specs.WriteString(p)
		specs.WriteByte(0)
	}
	if specs.Len() == 0 {
		return nil
	}
	_, err = g.run(ctx, call{dir: wt.path, args: []string{"restore", "--source=" + want.Tree, "--staged", "--worktree", "--no-overlay",
		"--pathspec-from-file=-", "--pathspec-file-nul"}, stdin: specs.Bytes()})
	return err
}

// entriesNow says which of paths have an index entry (of any stage) in
// wt now, read in process where it can be (listEntries), by git
// otherwise.
func (g *gitEnv) entriesNow(ctx context.Context, wt worktree, paths []string) (map[string]bool, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	var listed []byte
	ok := false
	if wt.gitDir != "" {
		listed, ok = g.listEntries(wt.gitDir, paths)
	}
	if !ok {
		c := call{dir: wt.path, args: []string{"ls-files", "-s", "-z"}, paths: paths}
		if len(paths) > 1000 {
			// Past a command line's length: the whole index.
			c.paths = nil
		}
		res, err := g.run(ctx, c)
		if err != nil {
			return nil, err
		}
		listed = res.out
	}
	has := map[string]bool{}
	for rec := range bytes.SplitSeq(listed, []byte{0}) {
		if _, p, ok := bytes.Cut(rec, []byte{'\t'}); ok {
			has[string(p)] = true
		}
	}
	return has, nil
}

// removeFile removes the file at rel in the working tree at dir, if it
// is there, and then each parent directory it leaves empty, as git does
// when a checkout removes a file.
func removeFile(dir, rel string) error {
	p := filepath.Join(dir, filepath.FromSlash(rel))
	// A leading directory that is a symlink would take the removal
	// outside the working tree.
	for d := filepath.Dir(p); d != dir && strings.HasPrefix(d, dir+string(filepath.Separator)); d = filepath.Dir(d) {
		if fi, err := os.Lstat(d); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return errcode.New(errcode.RestoreConflict, "a leading directory of %s is a symbolic link now; nothing is removed through it", rel)
		}
	}
	fi, err := os.Lstat(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		// A submodule's directory, or one the person put there: removed
		// when empty, otherwise left with what is in it, as git's own
		// checkout leaves it.
		_ = os.Remove(p)
		return nil
	}
	if err := os.Remove(p); err != nil {
		return err
	}
	for d := filepath.Dir(p); d != dir && strings.HasPrefix(d, dir+string(filepath.Separator)); d = filepath.Dir(d) {
		if os.Remove(d) != nil {
			break
		}
	}
	return nil
}
