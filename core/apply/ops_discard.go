package apply

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/core/apply/seal"
	"github.com/sluicehq/sluice/core/proposal"
	"github.com/sluicehq/sluice/core/restorepoint"
)

// discardStep throws away uncommitted changes to paths: index and files
// go back to HEAD, and with Untracked, untracked files there are removed
// (ignored files never are).
type discardStep struct {
	a *proposal.DiscardArgs
	// now is what the paths held when the proposal's only step was
	// scoped (see scope), before anything was written: its check and its
	// run read it instead of asking git again. nil in a plan, or when the
	// index has conflicts there.
	now *discardRead
	// scope is the paths its restore point records, with now.
	scope []string
}

func (s *discardStep) name() proposal.Op { return proposal.OpDiscard }

func (s *discardStep) touch(_ context.Context, r *run, t touches) error {
	t.of(r.main).addWorktree(r.main.main(), depthFiles)
	return nil
}

func (s *discardStep) check(ctx context.Context, r *run) error {
	if err := r.requireOnBranch(ctx, s.a.Branch); err != nil {
		return err
	}
	if err := requireNoOperation(r.main.main()); err != nil {
		return err
	}
	return s.verify(ctx, r)
}

func (s *discardStep) do(ctx context.Context, r *run, w *writing) error {
	rc := r.main
	head := r.expect["HEAD"]
	// git restore refuses a path it knows nothing about (one that holds
	// only untracked files), so only the paths known to the index or HEAD
	// go to it; clean takes care of the rest.
	var known []string
	if s.now != nil {
		known = knownPaths(s.a.Paths, s.now.tracked())
	} else {
		res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"ls-files", "-z", "--with-tree=" + head}, paths: s.a.Paths, dashdash: true})
		if err != nil {
			return err
		}
		known = knownPaths(s.a.Paths, strings.Split(string(res.out), "\x00"))
	}
	r.changed = true
	if len(known) > 0 {
		if _, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"restore", "--source=" + head, "--staged", "--worktree"}, paths: known, dashdash: true}); err != nil {
			return err
		}
	}
	what := "uncommitted changes"
	if s.a.Untracked {
		if _, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"clean", "--force", "-d", "--quiet"}, paths: s.a.Paths, dashdash: true}); err != nil {
			return err
		}
		what = "uncommitted changes and untracked files"
	}
	s.left(ctx, r, w)
	r.note("discarded %s in %s", what, strings.Join(limitList(s.a.Paths, 20), ", "))
	return nil
}

// verify: the files are still exactly as sealed.
func (s *discardStep) verify(ctx context.Context, r *run) error {
	sealed := r.sealedStep()
	if sealed == nil {
		return nil
	}
	if s.now != nil {
		// The usual case, read at the discard's paths alone; anything it
		// cannot vouch for goes to the whole comparison, which also names
		// what changed.
		if same, err := s.sameOnDisk(ctx, r, sealed.Before); err != nil || same {
			return err
		}
	}
	return r.unchanged(ctx, sealed.Before, func(ctx context.Context, sl *seal.Work, headTree string) (string, error) {
		t, _, err := seal.DiscardState(ctx, sl, s.a, r.expect["HEAD"], headTree)
		return t, err
	})
}

// discardRead is what a discard's paths hold, read in one moment: the
// index's entries there, HEAD's, and (with Untracked) the untracked
// files that are not ignored. Each list is read under the discard's
// pathspecs, so its cost follows the paths (git still loads the index
// once for each).
type discardRead struct {
	// index and head map each path to "mode sha".
	index, head map[string]string
	// entries are the index's records there, as restorepoint.IndexEntries
	// gives them.
	entries   []byte
	untracked []string
}

// read reads the discard's paths; nil, without error, when the index
// has conflicts there (the whole-tree path refuses them with its own
// words).
func (s *discardStep) read(ctx context.Context, r *run) (*discardRead, error) {
	rc := r.main
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"ls-files", "-s", "-z"}, paths: s.a.Paths, dashdash: true})
	if err != nil {
		return nil, err
	}
	d := &discardRead{index: map[string]string{}, head: map[string]string{}}
	for rec := range bytes.SplitSeq(res.out, []byte{0}) {
		meta, path, ok := bytes.Cut(rec, []byte{'\t'})
		if !ok {
			continue
		}
		f := strings.Fields(string(meta))
		if len(f) != 3 || f[2] != "0" {
			return nil, nil
		}
		d.index[string(path)] = f[0] + " " + f[1]
		d.entries = append(append(d.entries, rec...), 0)
	}
	res, err = rc.g.run(ctx, call{dir: rc.path, args: []string{"ls-tree", "-r", "-z", "--full-tree"}, revs: []string{r.expect["HEAD"]}, paths: s.a.Paths, dashdash: true})
	if err != nil {
		return nil, err
	}
	for rec := range bytes.SplitSeq(res.out, []byte{0}) {
		meta, path, ok := bytes.Cut(rec, []byte{'\t'})
		if f := strings.Fields(string(meta)); ok && len(f) == 3 {
			d.head[string(path)] = f[0] + " " + f[2]
		}
	}
	if s.a.Untracked {
		res, err = rc.g.run(ctx, call{dir: rc.path, args: []string{"ls-files", "-z", "--others", "--exclude-standard"}, paths: s.a.Paths, dashdash: true})
		if err != nil {
			return nil, err
		}
		d.untracked = restorepoint.SortedPaths(strings.Split(string(res.out), "\x00"))
	}
	return d, nil
}

// tracked lists the paths the index or HEAD holds.
func (d *discardRead) tracked() []string {
	return restorepoint.SortedPaths(append(slices.Collect(maps.Keys(d.index)), slices.Collect(maps.Keys(d.head))...))
}

// staged lists the paths whose index entry differs from HEAD's (git
// diff-index --cached --name-only).
func (d *discardRead) staged() []string {
	var out []string
	for _, p := range d.tracked() {
		if d.index[p] != d.head[p] {
			out = append(out, p)
		}
	}
	return out
}

// entriesAt are the index's records at paths, as
// restorepoint.IndexEntries reads them.
func (d *discardRead) entriesAt(paths []string) []byte {
	want := map[string]bool{}
	for _, p := range paths {
		want[p] = true
	}
	var keep []byte
	for rec := range bytes.SplitSeq(d.entries, []byte{0}) {
		if _, path, ok := bytes.Cut(rec, []byte{'\t'}); ok && want[string(path)] {
			keep = append(append(keep, rec...), 0)
		}
	}
	return keep
}

// sameOnDisk reports whether the discard's files are as the sealed state
// want has them (HEAD's tree with the files the discard throws away as
// they were on disk): the files now at the discard's paths are hashed,
// without writing an object, and compared with want's entries under
// those paths. false sends the caller to the whole comparison; so does
// anything this cannot tell as git would (a directory, a symbolic link
// or a special file at a path, an executable bit the index does not
// agree with, since core.fileMode may tell git to ignore it; a name with a
// carriage return, which --stdin-paths would read as another; and a file
// git may convert on the way in (line endings, a filter, an encoding):
// the sealed blob is what git add made of the bytes, hash-object does not
// convert as add does when the index holds CRLF, so only bytes git stores
// as they are can be compared this way).
func (s *discardStep) sameOnDisk(ctx context.Context, r *run, want string) (bool, error) {
	rc, d := r.main, s.now
	files := restorepoint.SortedPaths(append(d.tracked(), d.untracked...))
	if converts, err := mayConvert(ctx, rc, files); err != nil || converts {
		return false, err
	}
	have := map[string]string{}
	var present []string
	var in bytes.Buffer
	for _, p := range files {
		fi, err := os.Lstat(filepath.Join(rc.path, filepath.FromSlash(p)))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil || !fi.Mode().IsRegular() {
			return false, nil
		}
		mode, ix := "100644", d.index[p]
		if fi.Mode()&0o111 != 0 {
			mode = "100755"
		}
		if ix != "" && !strings.HasPrefix(ix, mode+" ") || ix == "" && mode == "100755" {
			return false, nil
		}
		present = append(present, p)
		have[p] = mode
		in.WriteString(p)
		in.WriteByte('\n')
	}
	if len(present) > 0 {
		if len(present) != strings.Count(in.String(), "\n") || strings.Contains("\n"+in.String(), "\n\"") || strings.Contains(in.String(), "\r") {
			return false, nil // a name --stdin-paths would read otherwise
		}
		res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"hash-object", "--stdin-paths"}, stdin: in.Bytes()})
		if err != nil {
			return false, err
		}
		sc := bufio.NewScanner(bytes.NewReader(res.out))
		for i := 0; sc.Scan(); i++ {
			if i >= len(present) {
				return false, nil
			}
			have[present[i]] += " " + sc.Text()
		}
	}
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"ls-tree", "-r", "-z", "--full-tree"}, revs: []string{want}, paths: s.a.Paths, dashdash: true})
	if err != nil {
		return false, err
	}
	wanted := map[string]string{}
	for rec := range bytes.SplitSeq(res.out, []byte{0}) {
		meta, path, ok := bytes.Cut(rec, []byte{'\t'})
		if f := strings.Fields(string(meta)); ok && len(f) == 3 {
			wanted[string(path)] = f[0] + " " + f[2]
		}
	}
	return maps.Equal(have, wanted), nil
}

// mayConvert reports whether git may store any of paths as other bytes
// than the file's: core.autocrlf on, or an attribute that converts (text,
// eol, crlf, a filter, ident, working-tree-encoding) set for a path.
func mayConvert(ctx context.Context, rc *repoCtx, paths []string) (bool, error) {
	switch v, _ := rc.repo.Config("core.autocrlf"); strings.ToLower(v) {
	case "", "false", "no", "off", "0":
	default:
		return true, nil
	}
	if len(paths) == 0 {
		return false, nil
	}
	var in bytes.Buffer
	for _, p := range paths {
		in.WriteString(p)
		in.WriteByte(0)
	}
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"check-attr", "--stdin", "-z", "text", "eol", "crlf", "filter", "ident", "working-tree-encoding"}, stdin: in.Bytes()})
	if err != nil {
		return false, err
	}
	f := strings.Split(string(res.out), "\x00")
	for i := 0; i+2 < len(f); i += 3 {
		if v := f[i+2]; v != "unspecified" && v != "unset" {
			return true, nil
		}
	}
	return false, nil
}

// left tells the end state what the discard left at its scope: git
// restore --source=HEAD --staged --worktree sets each index entry and
// file there to HEAD's, or takes both away where HEAD has none, and git
// clean removes the untracked files, so index and files there are HEAD's
// entries, written as one tree, and the end state reads neither the
// index nor the files again. Should the files not be so (a filter that
// does not give back what it was given), a later restore sees a change
// and asks, as after a restore (see effects.restored). If the tree
// cannot be written, the end state reads them as usual.
func (s *discardStep) left(ctx context.Context, r *run, w *writing) {
	if s.now == nil || len(s.scope) == 0 {
		return
	}
	rc, wt := r.main, r.main.main()
	var entries bytes.Buffer
	for _, p := range s.scope {
		if e, ok := s.now.head[p]; ok {
			mode, sha, _ := strings.Cut(e, " ")
			fmt.Fprintf(&entries, "%s %s 0\t%s\x00", mode, sha, p)
		}
	}
	tmp, err := os.MkdirTemp("", "sluice-snapshot-")
	if err != nil {
		return
	}
	defer os.RemoveAll(tmp)
	t, err := restorepoint.IndexTree(ctx, rc.g.inWorktree(wt), tmp, nil, entries.Bytes())
	if err != nil {
		return
	}
	ef := w.left[rc]
	if ef.restored == nil {
		ef.restored = map[string]WorktreeState{}
	}
	ef.restored[wt.path] = WorktreeState{Paths: s.scope, Files: true, Index: t, Tree: t}
}
