package apply

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
	"github.com/sluicehq/sluice/core/restorepoint"
)

// scope narrows the restore point of a working tree to the paths the
// operation changes there, where those are known for certain before it
// runs: then the restore point, the end state and a restore read and
// write those paths alone, and cost what the change touches rather than
// what the working tree holds. Everything else keeps the whole-tree
// record.
//
// Known for certain are:
//   - a patch to the working tree: git apply writes the files the patch
//     names and nothing else;
//   - a patch to the index: git apply --cached writes the index entries
//     of the files the patch names and no file, so the restore point
//     records those entries alone (a scope of the index);
//   - a mixed reset: it sets the index entries that differ between the
//     index and the target's tree to the target's, and writes no file
//     (a scope of the index); a soft one records HEAD alone anyway;
//   - a merge or fast-forward that moves the branch checked out in a
//     working tree: the checkout (clean, as the merge requires) goes from
//     HEAD's tree to the sealed result, which the merge verifies it
//     reaches, so exactly the paths that differ between the two change;
//   - a discard of named paths: it sets the index entries and files
//     that differ from HEAD under those paths back to HEAD's (and
//     removes the untracked files there, when asked). Which files differ
//     is the sealed outcome's (the check finds them still as sealed);
//     which index entries differ is read now, from the index alone;
//   - a commit with no hook of the person's to run: it sets the index
//     entries at the sealed paths to the new HEAD's (see commitSealed)
//     and writes no file, so the restore point records those entries
//     alone (a scope of the index, WorktreeState.Paths without Files).
//     A hook is the person's own program and may write any file or
//     stage anything, so with hooks the whole working tree is recorded;
//     so it is for a session's commit, whose checkout is written from
//     the whole index.
//
// Only single-step proposals are narrowed: in a plan, a later step may
// change what an earlier one left.
func (r *run) scope(ctx context.Context, ops []step, t touches) error {
	defer wantFullStatus(t)
	if len(ops) != 1 {
		return nil
	}
	switch s := ops[0].(type) {
	case *patchStep:
		files, ok := s.a.FilesTouched()
		if !ok {
			return nil
		}
		// A patch to the index writes the entries at its files alone: a
		// scope of the index, as for a commit.
		t.of(r.main).addScope(r.main.main(), restorepoint.SortedPaths(files))
	case *mergeStep:
		sealed := r.p.Sealed
		if s.wt == nil || sealed == nil || sealed.After == "" {
			return nil
		}
		h, err := r.main.headOf(ctx, s.wt.path)
		if err != nil {
			return err
		}
		paths, err := r.main.changedPaths(ctx, h.tree, sealed.After)
		if err != nil {
			return err
		}
		t.of(r.main).addScope(*s.wt, paths)
	case *discardStep:
		sealed := r.sealedStep()
		if sealed == nil {
			return nil
		}
		d, err := s.read(ctx, r)
		if err != nil {
			return err
		}
		if d != nil {
			// One read of the paths serves the scope, the check, the
			// restore point's index entries and the run.
			wt := r.main.main()
			paths := restorepoint.SortedPaths(append(sealed.SealedPaths(), d.staged()...))
			if allUnder(paths, s.a.Paths) {
				r.main.reads.putEntries(entriesKey(wt, paths), d.entriesAt(paths))
			}
			t.of(r.main).addScope(wt, paths)
			s.now, s.scope = d, paths
			return nil
		}
		res, err := r.main.g.run(ctx, call{dir: r.main.path, args: []string{"diff-index", "--cached", "--name-only", "-z", "--no-renames"},
			revs: []string{r.expect["HEAD"]}, paths: s.a.Paths, dashdash: true})
		if err != nil {
			return err
		}
		paths := append(sealed.SealedPaths(), strings.Split(string(res.out), "\x00")...)
		t.of(r.main).addScope(r.main.main(), restorepoint.SortedPaths(paths))
	case *resetStep:
		// A mixed reset makes the index the target's tree: exactly the
		// entries that differ between the index and that tree change (git
		// diff-index --cached, which skips what the index's cache-tree
		// shares with it), and no file. A soft one moves HEAD alone.
		wt := r.main.main()
		if s.a.Mode != proposal.ResetMixed || t.of(r.main).worktrees[wt] != depthIndex {
			return nil
		}
		res, err := r.main.g.run(ctx, call{dir: r.main.path, args: []string{"diff-index", "--cached", "--name-only", "-z", "--no-renames"},
			revs: []string{r.expect[s.a.Target]}, dashdash: true})
		if err != nil {
			return err
		}
		t.of(r.main).addScope(wt, restorepoint.SortedPaths(strings.Split(string(res.out), "\x00")))
	case *commitStep:
		wt := r.main.main()
		if r.p.Origin != nil || t.of(r.main).worktrees[wt] != depthIndex {
			return nil
		}
		t.of(r.main).addScope(wt, r.sealedStep().SealedPaths())
	}
	return nil
}

// allUnder reports whether every path lies at or under one of the
// pathspecs.
func allUnder(paths, specs []string) bool {
	for _, p := range paths {
		if len(knownPaths(specs, []string{p})) == 0 {
			return false
		}
	}
	return true
}

// wantFullStatus tells each repository's moment which worktrees get a
// whole-tree restore point (files, no scope), whose status the checks
// of tracked files then share; the others' checks read tracked files
// alone.
func wantFullStatus(t touches) {
	for rc, ts := range t {
		for wt, d := range ts.worktrees {
			if d == depthFiles && len(ts.scopes[wt]) == 0 {
				rc.reads.wantFull(wt.path)
			}
		}
	}
}

// changedPaths lists, sorted, every path whose entry differs between two
// trees (both sides of a rename, as git read-tree changes them). git
// diff-tree skips the subtrees the two share, so this costs what
// differs.
func (rc *repoCtx) changedPaths(ctx context.Context, from, to string) ([]string, error) {
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"diff-tree", "-r", "-z", "--name-only", "--no-renames"}, revs: []string{from, to}})
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, p := range strings.Split(string(res.out), "\x00") {
		if p != "" {
			paths = append(paths, p)
		}
	}
	return restorepoint.SortedPaths(paths), nil
}

// sameAtPaths reports whether the working tree of the main worktree at
// paths is what the tree want holds there, for a state tree that is
// HEAD's tree with those paths alone replaced by what is on disk (a
// patch's state before or after, sealed on the pinned HEAD, which the
// checks already found in place): then want equals the state tree now
// exactly when the paths do, and the check reads those paths alone
// instead of building the whole tree again. false sends the caller to
// the whole comparison, which also names what differs; so does a want
// that holds a directory at one of the paths.
//
// after, when the check follows the operation's last write, keeps the
// index entries it read for the end state.
func (r *run) sameAtPaths(ctx context.Context, want string, paths []string, after *effects) (bool, error) {
	rc := r.main
	if len(paths) == 0 {
		return false, nil
	}
	paths = restorepoint.SortedPaths(paths)
	wt := rc.main()
	// The files are hashed into a scratch object directory: a check
	// leaves the repository as it was.
	tmp, err := os.MkdirTemp("", "sluice-check-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(tmp)
	objs := filepath.Join(tmp, "objects")
	if err := os.Mkdir(objs, 0o700); err != nil {
		return false, err
	}
	objEnv := []string{"GIT_OBJECT_DIRECTORY=" + objs, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + rc.objectsDir()}
	git := rc.g.inWorktree(wt)
	entries, err := rc.indexEntries(ctx, wt, paths)
	if err != nil {
		return false, err
	}
	after.readAfter(wt, paths, entries)
	_, files, err := restorepoint.PathTrees(ctx, git, wt.path, tmp, paths, objEnv, entries)
	if errors.Is(err, restorepoint.ErrNotAFile) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	wanted, ok, err := rc.entriesAt(ctx, want, paths)
	if err != nil || !ok {
		return false, err
	}
	scratch := func(ctx context.Context, c restorepoint.Call) ([]byte, error) {
		c.Env = append(c.Env, objEnv...)
		return git(ctx, c)
	}
	have, err := restorepoint.TreeEntries(ctx, scratch, files)
	if err != nil {
		return false, err
	}
	return maps.Equal(have, wanted), nil
}

// sameOnDisk is the patch's check of its state before or after (want)
// through sameAtPaths, where that holds: a patch to the working tree
// that is the proposal's only step, whose state tree is HEAD's with the
// patch's files as they are on disk.
func (s *patchStep) sameOnDisk(ctx context.Context, r *run, want string, after *effects) (bool, error) {
	if s.a.Target != proposal.PatchWorktree || r.p.Sealed == nil || len(r.p.Sealed.Steps) > 0 {
		return false, nil
	}
	files, ok := s.a.FilesTouched()
	if !ok {
		return false, nil
	}
	return r.sameAtPaths(ctx, want, files, after)
}

// sameInIndex is the check of a patch to the index against its sealed
// state before or after (want, the whole index as a tree when it was
// sealed): git apply --cached reads and writes the index entries of the
// patch's files alone, so those entries as want has them are what it
// needs; the person's staging elsewhere since then is theirs, as for a
// commit of named paths, and the scoped restore point leaves it. Only
// the entries at those paths are read. false sends the caller to the
// whole comparison, which also names what differs.
func (s *patchStep) sameInIndex(ctx context.Context, r *run, want string, after *effects) (bool, error) {
	if s.a.Target != proposal.PatchIndex || r.p.Sealed == nil || len(r.p.Sealed.Steps) > 0 {
		return false, nil
	}
	files, ok := s.a.FilesTouched()
	if !ok || len(files) == 0 {
		return false, nil
	}
	rc := r.main
	paths := restorepoint.SortedPaths(files)
	entries, err := rc.indexEntries(ctx, rc.main(), paths)
	if err != nil {
		return false, err
	}
	after.readAfter(rc.main(), paths, entries)
	have := map[string]string{}
	for _, rec := range strings.Split(string(entries), "\x00") {
		meta, p, ok := strings.Cut(rec, "\t")
		if f := strings.Fields(meta); ok && len(f) == 3 {
			have[p] = f[0] + " " + f[1]
		}
	}
	wanted, ok, err := rc.entriesAt(ctx, want, paths)
	if err != nil || !ok {
		return false, err
	}
	return maps.Equal(have, wanted), nil
}

// entriesAt is the mode and blob ("100644 <id>") of each file of tree
// want at paths; ok is false when the tree holds at paths something other
// than those files (a directory's entries, a line it cannot read).
func (rc *repoCtx) entriesAt(ctx context.Context, want string, paths []string) (map[string]string, bool, error) {
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"ls-tree", "-r", "-z", "--full-tree"}, revs: []string{want}, paths: paths})
	if err != nil {
		return nil, false, err
	}
	in := map[string]bool{}
	for _, p := range paths {
		in[p] = true
	}
	wanted := map[string]string{}
	for _, rec := range strings.Split(string(res.out), "\x00") {
		meta, p, ok := strings.Cut(rec, "\t")
		if !ok {
			continue
		}
		f := strings.Fields(meta)
		if !in[p] || len(f) != 3 {
			return nil, false, nil
		}
		wanted[p] = f[0] + " " + f[2]
	}
	return wanted, true, nil
}

// refuseIntentToAdd refuses, before anything is written, an operation
// whose scope holds an index entry marked intent-to-add (git add -N): a
// scoped restore point records index entries as mode, object and path,
// which cannot say "intent to add", so its restore would stage the file
// empty instead. The person stages or unstages the file and approves
// again; nothing has changed.
//
// The same read lists the entries (ls-files -s), which the checks and
// the restore point of this moment take from it (see indexEntries)
// instead of loading the whole index again. Where the index file is read
// in process (listEntries: a whole version 2 index, which cannot hold an
// intent-to-add entry, its flag being an extended one that version 2
// has not) no git reads the whole index for it.
func (r *run) refuseIntentToAdd(ctx context.Context, t touches) error {
	for rc, set := range t {
		for wt, paths := range set.scopes {
			if rc.entriesInProcess && wt.gitDir != "" {
				if listed, ok := rc.g.listEntries(wt.gitDir, paths); ok {
					rc.reads.putListed(entriesKey(wt, paths), listed)
					continue
				}
			}
			res, err := rc.g.run(ctx, call{dir: wt.path, args: []string{"ls-files", "-s", "-z", "--debug"}, paths: paths})
			if err != nil {
				return err
			}
			listed, ita, err := readDebug(res.out)
			if err != nil {
				return err
			}
			if len(ita) > 0 {
				return errcode.New(errcode.Unsupported, "%s is marked intent-to-add (git add -N), which a restore of this operation could not put back as it is; stage it (git add) or unstage it (git rm --cached), then approve again", strings.Join(ita, ", "))
			}
			rc.reads.putListed(entriesKey(wt, paths), listed)
		}
	}
	return nil
}

// readDebug reads `git ls-files -s -z --debug`: the answer of `git
// ls-files -s -z` (each entry "mode object stage\tpath" and a NUL), and
// the paths of the entries marked intent-to-add.
func readDebug(out []byte) ([]byte, []string, error) {
	var listed bytes.Buffer
	var ita []string
	err := debugEntries(out, func(name []byte, flags uint64) error {
		meta, path, ok := bytes.Cut(name, []byte{'\t'})
		if !ok || len(bytes.Fields(meta)) != 3 {
			return errcode.New(errcode.GitFailed, "git ls-files -s --debug gave an unexpected answer")
		}
		listed.Write(name)
		listed.WriteByte(0)
		if flags&flagIntentToAdd != 0 {
			ita = append(ita, string(path))
		}
		return nil
	})
	return listed.Bytes(), ita, err
}

// flagIntentToAdd marks an index entry intent-to-add in the flags `git
// ls-files --debug` prints.
const flagIntentToAdd = 0x20000000

// intentToAdd lists the paths whose entries `git ls-files -z --debug`
// marks intent-to-add.
func intentToAdd(out []byte) ([]string, error) {
	var ita []string
	err := debugEntries(out, func(name []byte, flags uint64) error {
		if flags&flagIntentToAdd != 0 {
			ita = append(ita, string(name))
		}
		return nil
	})
	return ita, err
}

// debugEntries calls f with each entry of `git ls-files -z --debug`:
// its name (with -s, "mode object stage\tpath") and a NUL, then five
// lines, the last "  size: N\tflags: X".
func debugEntries(out []byte, f func(name []byte, flags uint64) error) error {
	bad := errcode.New(errcode.GitFailed, "git ls-files --debug gave an unexpected answer")
	for len(out) > 0 {
		name, rest, ok := bytes.Cut(out, []byte{0})
		if !ok {
			return bad
		}
		var line []byte
		for range 5 {
			if line, rest, ok = bytes.Cut(rest, []byte{'\n'}); !ok {
				return bad
			}
		}
		_, flags, ok := bytes.Cut(line, []byte("flags: "))
		if !ok {
			return bad
		}
		v, err := strconv.ParseUint(string(flags), 16, 32)
		if err != nil {
			return bad
		}
		if err := f(name, v); err != nil {
			return err
		}
		out = rest
	}
	return nil
}
