package seal

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/sluicehq/sluice/core/apply/internal/gitrun"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
)

// Work is one proposal being sealed, or a state the executor computes
// again, the way sealing did, to compare with the sealed outcome. It
// writes only git objects and temporary index files under its scratch
// directory; it never touches the person's index, working tree or refs.
type Work struct {
	git *gitrun.Git
	// tmp holds temporary index files; the caller removes it when the
	// sealing ends. makeTmp: it does not exist yet, and is made when a
	// file is first put there (a small stageAll needs none).
	tmp     string
	makeTmp bool
	n       int
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
	// p and in, when sealing (see Outcome), are the proposal and what the
	// executor reads for it.
	p  proposal.Proposal
	in Inputs
	// filters is each path's filter attribute in the working tree, as the
	// file list read it (see binaryByAttributes).
	filters map[string]string
	// fresh are the objects this sealing staged in process (add_local.go),
	// by id, with their content: the file list reads them from here
	// instead of from the disk they were just written to.
	fresh map[[20]byte]freshObject
}

// freshObject is an object's type and content.
type freshObject struct {
	kind    plumbing.ObjectType
	content []byte
}

// rememberFilters keeps the filter attributes the file list read.
func (w *Work) rememberFilters(filters map[string]string) {
	if w.filters == nil {
		w.filters = map[string]string{}
	}
	maps.Copy(w.filters, filters)
}

// New returns a sealing in the repository of git, with its temporary
// files in tmp.
func New(git *gitrun.Git, tmp string) *Work { return &Work{git: git, tmp: tmp} }

// movedCheckout records that a step of a plan leaves the main working
// tree's checkout at tree: what earlier steps left in its files is gone.
func (w *Work) movedCheckout(tree string) { w.worktree, w.overlay, w.overlaid = tree, "", nil }

// run runs git in the repository with the sealing's environment.
func (w *Work) run(ctx context.Context, c gitrun.Call) (gitrun.Result, error) {
	c.Dir = w.git.Repo.Root
	c.Env = append(slices.Clone(w.env), c.Env...)
	return w.git.Run(ctx, c)
}

// Scratch makes the sealing write its objects to a temporary object
// directory inside its scratch directory, so the repository stays
// exactly as it was.
func (w *Work) Scratch() error {
	dir, err := w.scratch()
	if err != nil {
		return err
	}
	objs := filepath.Join(dir, "objects")
	if err := os.Mkdir(objs, 0o700); err != nil {
		return err
	}
	w.env = []string{"GIT_OBJECT_DIRECTORY=" + objs, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(w.git.Repo.CommonDir, "objects")}
	return nil
}

// addOverlay records that files hold what tree has for them after a
// step; what earlier steps left in other files stays.
func (w *Work) addOverlay(ctx context.Context, tree string, files []string) error {
	env, _, err := w.index(ctx, tree)
	if err != nil {
		return err
	}
	var keep []string
	for f := range w.overlaid {
		if !slices.Contains(files, f) {
			keep = append(keep, f)
		}
	}
	slices.Sort(keep)
	if err := w.applyOverlay(ctx, env, keep); err != nil {
		return err
	}
	if w.overlay, err = w.writeTree(ctx, env); err != nil {
		return err
	}
	if w.overlaid == nil {
		w.overlaid = map[string]bool{}
	}
	for _, f := range files {
		w.overlaid[f] = true
	}
	return nil
}

// applyOverlay replaces, in the index of env, the entries of files by the
// overlay's (removing those the overlay does not have).
func (w *Work) applyOverlay(ctx context.Context, env []string, files []string) error {
	if len(files) == 0 || w.overlay == "" {
		return nil
	}
	if _, err := w.run(ctx, gitrun.Call{Args: []string{"rm", "--cached", "-r", "-q", "--ignore-unmatch", "--pathspec-from-file=-", "--pathspec-file-nul"},
		Env: env, Stdin: gitrun.NulList(files)}); err != nil {
		return err
	}
	over, _, err := w.index(ctx, w.overlay)
	if err != nil {
		return err
	}
	res, err := w.run(ctx, gitrun.Call{Args: []string{"ls-files", "-s", "-z"}, Paths: files, DashDash: true, Env: over})
	if err != nil {
		return err
	}
	if len(res.Out) > 0 {
		_, err = w.run(ctx, gitrun.Call{Args: []string{"update-index", "-z", "--index-info"}, Env: env, Stdin: res.Out})
	}
	return err
}

// index returns the environment of a new temporary index file, filled
// from tree ("" leaves it empty), and its path.
func (w *Work) index(ctx context.Context, tree string) ([]string, string, error) {
	return w.newIndex(ctx, tree, false)
}

// indexCopy returns the environment of a new temporary index file that
// is a copy of the main working tree's own index, and its path.
func (w *Work) indexCopy(ctx context.Context) ([]string, string, error) {
	return w.newIndex(ctx, "", true)
}

func (w *Work) newIndex(ctx context.Context, tree string, copyMain bool) ([]string, string, error) {
	dir, err := w.scratch()
	if err != nil {
		return nil, "", err
	}
	w.n++
	path := filepath.Join(dir, "index"+strconv.Itoa(w.n))
	env := []string{"GIT_INDEX_FILE=" + path}
	if copyMain {
		if err := gitx.CopyIndex(filepath.Join(w.git.Repo.GitDir, "index"), path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, "", err
		}
		return env, path, nil
	}
	if tree != "" {
		if _, err := w.run(ctx, gitrun.Call{Args: []string{"read-tree"}, Revs: []string{tree}, Env: env}); err != nil {
			return nil, "", err
		}
	}
	return env, path, nil
}

// scratch is the directory of the sealing's temporary files, made (for
// this process's user alone) when first needed where the caller left that
// to the sealing: one that is there already is refused, not shared.
func (w *Work) scratch() (string, error) {
	if w.makeTmp {
		if err := os.Mkdir(w.tmp, 0o700); err != nil {
			return "", err
		}
		w.makeTmp = false
	}
	return w.tmp, nil
}

// copyIndexFile copies a temporary index to a new one.
func (w *Work) copyIndexFile(from string) ([]string, error) {
	dir, err := w.scratch()
	if err != nil {
		return nil, err
	}
	w.n++
	path := filepath.Join(dir, "index"+strconv.Itoa(w.n))
	if err := gitx.CopyIndex(from, path); err != nil {
		return nil, err
	}
	return []string{"GIT_INDEX_FILE=" + path}, nil
}

// writeTree writes the tree of a temporary index.
func (w *Work) writeTree(ctx context.Context, env []string) (string, error) {
	if t, ok := w.writeTreeLocal(env); ok {
		return t, nil
	}
	res, err := w.run(ctx, gitrun.Call{Args: []string{"write-tree"}, Env: env})
	if err != nil {
		if strings.Contains(gitrun.StderrOf(err), "unmerged") {
			return "", errcode.New(errcode.OperationInProgress, "the index has unresolved conflicts; resolve or abort them first")
		}
		return "", err
	}
	return res.Text(), nil
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
// behind (git's own gc folds packs together once there are 50), and do
// not wait for the pack's syncs: a few loose objects cost less. A
// stageAll does not know how many files it stages before git tells; it
// stages loose only where the person's index has fewer than bulkPaths
// entries and the working tree fewer than bulkPaths files (ignored ones
// counted too), and in bulk otherwise.
var bulkObjects = []string{"-c", "core.bigFileThreshold=1"}

const bulkPaths = 100

// fewerFiles reports whether the working tree at root holds fewer than n
// files, .git directories left out. It stops reading once it has counted
// n, so a large tree costs no more than a small one.
func fewerFiles(root string, n int) bool {
	dirs := []string{root}
	for len(dirs) > 0 {
		d := dirs[len(dirs)-1]
		dirs = dirs[:len(dirs)-1]
		f, err := os.Open(d)
		if err != nil {
			return false
		}
		for {
			ents, err := f.ReadDir(64)
			for _, e := range ents {
				switch {
				case e.IsDir():
					if e.Name() != ".git" {
						dirs = append(dirs, filepath.Join(d, e.Name()))
					}
				default:
					if n--; n <= 0 {
						f.Close()
						return false
					}
				}
			}
			if err != nil {
				break
			}
		}
		f.Close()
	}
	return true
}

// indexEntries is how many entries the index file at path says it has:
// 0 when there is none, and bulkPaths when it cannot be read (so that a
// stageAll stages in bulk, as it did before it asked).
func indexEntries(path string) int {
	// Nothing but a file is opened or read (a fifo's opening would wait
	// for a writer), and the opening does not wait either should a fifo
	// be put there since.
	if st, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return 0
	} else if err != nil || !st.Mode().IsRegular() {
		return bulkPaths
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	} else if err != nil {
		return bulkPaths
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return bulkPaths
	}
	var h [12]byte
	if _, err := io.ReadFull(f, h[:]); err != nil || string(h[:4]) != "DIRC" {
		return bulkPaths
	}
	return int(binary.BigEndian.Uint32(h[8:]))
}

// addPaths stages paths (NUL-separated on stdin, so any path is literal)
// into a temporary index from the working tree, with every change:
// modifications, deletions, new files and modes.
func (w *Work) addPaths(ctx context.Context, env []string, paths []string, extra ...string) error {
	if len(paths) == 0 {
		return nil
	}
	args := append([]string{"add", "--all"}, extra...)
	args = append(args, "--pathspec-from-file=-", "--pathspec-file-nul")
	c := gitrun.Call{Args: args, Env: env, Stdin: gitrun.NulList(paths)}
	if len(paths) >= bulkPaths {
		c.Global = bulkObjects
	}
	_, err := w.run(ctx, c)
	if err != nil {
		if st := gitrun.StderrOf(err); strings.Contains(st, "did not match") || strings.Contains(st, "ignored by one of your .gitignore") {
			return &errcode.Error{Code: errcode.InvalidArgument, Err: err, Msg: "a path cannot be committed: " + clip(strings.TrimSpace(st), 500)}
		}
		return err
	}
	return nil
}

// listPaths runs a git command that prints NUL-separated paths.
func (w *Work) listPaths(ctx context.Context, env []string, c gitrun.Call) ([]string, error) {
	c.Env = env
	res, err := w.run(ctx, c)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range strings.Split(string(res.Out), "\x00") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out, nil
}

// Tree is the tree of a commit.
func (w *Work) Tree(ctx context.Context, commit string) (string, error) {
	t, err := w.git.Trees(ctx, w.git.Repo.Root, commit)
	if err != nil {
		return "", err
	}
	return t[commit], nil
}

// newTree writes the temporary index of env as a tree and lists how it
// differs from before; a tree the same as before is nothing to commit
// (nothing says why).
func (w *Work) newTree(ctx context.Context, env []string, before string, nothing *errcode.Error) (string, []proposal.FileChange, error) {
	after, err := w.writeTree(ctx, env)
	if err != nil {
		return "", nil, err
	}
	return w.treeChanges(ctx, before, after, nothing)
}

// treeChanges is the file list of a new tree after, made from before;
// nothing when they are the same.
func (w *Work) treeChanges(ctx context.Context, before, after string, nothing *errcode.Error) (string, []proposal.FileChange, error) {
	if after == before {
		return "", nil, nothing
	}
	files, err := w.Changes(ctx, before, after)
	if err != nil {
		return "", nil, err
	}
	return after, files, nil
}

// Changes lists the changes from tree a to tree b with their modes,
// blobs, sizes and whether git treats them as binary. Renames are
// detected as git's diff would show them.
func (w *Work) Changes(ctx context.Context, a, b string) ([]proposal.FileChange, error) {
	out := []proposal.FileChange{}
	if a == b {
		return out, nil
	}
	return w.changesByRule(ctx, a, b)
}

// changesByNumstat is changes with git's line counts saying which files
// are binary (see facts.go).
func (w *Work) changesByNumstat(ctx context.Context, a, b string) ([]proposal.FileChange, error) {
	out := []proposal.FileChange{}
	// The line counts that say which files git treats as binary read every
	// blob on both sides; the sizes need only each blob's header. So the
	// sizes are looked up at the same time, from the list of blobs a tree
	// comparison gives without reading any.
	var sizes map[string]int64
	var sizesErr error
	var wg sync.WaitGroup
	wg.Go(func() { sizes, sizesErr = w.blobSizes(ctx, a, b) })
	res, err := w.run(ctx, gitrun.Call{Args: []string{"diff-tree", "-r", "-z", "-M", "--raw", "--numstat", "--no-commit-id", "--no-abbrev"}, Revs: []string{a, b}, DashDash: true})
	wg.Wait()
	if err == nil {
		err = sizesErr
	}
	if err != nil {
		return nil, err
	}
	for _, r := range gitx.ParseRawNumstat(res.Out) {
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
func (w *Work) blobSizes(ctx context.Context, a, b string) (map[string]int64, error) {
	res, err := w.run(ctx, gitrun.Call{Args: []string{"diff-tree", "-r", "-z", "--raw", "--no-commit-id", "--no-abbrev"}, Revs: []string{a, b}, DashDash: true})
	if err != nil {
		return nil, err
	}
	var in bytes.Buffer
	for _, r := range gitx.ParseRawNumstat(res.Out) {
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
	res, err = w.run(ctx, gitrun.Call{Args: []string{"cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)"}, Stdin: in.Bytes()})
	if err != nil {
		return nil, err
	}
	for _, l := range strings.Split(res.Text(), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[1] == "blob" {
			sizes[f[0]], _ = strconv.ParseInt(f[2], 10, 64)
		}
	}
	return sizes, nil
}

// refuseFilters refuses paths that a git filter (Git LFS, git-crypt, …)
// would transform on commit: Sluice commits the exact bytes it sealed
// and runs no filter before a person approved.
func (w *Work) refuseFilters(ctx context.Context, files []proposal.FileChange) error {
	return w.refuseFiltersIn(ctx, files, nil)
}

// refuseFiltersIn is refuseFilters with the attributes of the temporary
// index of env (check-attr --cached: its .gitattributes files, and the
// repository's own info/attributes), or of the working tree when env is
// nil.
func (w *Work) refuseFiltersIn(ctx context.Context, files []proposal.FileChange, env []string) error {
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
	// The working tree's attributes of every path, when the file list read
	// them already; the temporary index's are always read.
	var f []string
	if env == nil && w.filters != nil {
		for _, p := range paths {
			v, ok := w.filters[p]
			if !ok {
				f = nil
				break
			}
			f = append(f, p, "filter", v)
		}
	}
	if f == nil {
		args := []string{"check-attr", "--stdin", "-z"}
		if env != nil {
			args = append(args, "--cached")
		}
		res, err := w.run(ctx, gitrun.Call{Args: append(args, "filter"), Env: env, Stdin: gitrun.NulList(paths)})
		if err != nil {
			return err
		}
		f = strings.Split(string(res.Out), "\x00")
	}
	for i := 0; i+2 < len(f); i += 3 {
		if v := f[i+2]; v != "unspecified" && v != "unset" && v != "" {
			return errcode.New(errcode.Unsupported, "%s uses the git filter %q; Sluice commits exactly the bytes shown on the card and runs no filter before approval, so commit this path yourself", f[i], v)
		}
	}
	return nil
}

// WorktreeState is the state of the given paths of the working tree as a
// tree: HEAD's tree with each path replaced by what is on disk (absent
// when it is gone), and the temporary index that holds it. Untracked
// files are included only when listed. The files are hashed on a copy of
// the person's index, whose stat data spares rehashing what did not
// change; the entries for the paths are then carried over onto HEAD's
// tree, so nothing else the person staged comes along.
func (w *Work) WorktreeState(ctx context.Context, headTree string, paths []string) (string, string, error) {
	scan, _, err := w.indexCopy(ctx)
	if err != nil {
		return "", "", err
	}
	env, idx, err := w.index(ctx, headTree)
	if err != nil {
		return "", "", err
	}
	if len(paths) == 0 {
		t, err := w.writeTree(ctx, env)
		return t, idx, err
	}
	known := map[string]bool{}
	for _, which := range [][]string{scan, env} {
		entries, err := w.listPaths(ctx, which, gitrun.Call{Args: []string{"ls-files", "-z"}, Paths: paths, DashDash: true})
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
		} else if _, err := os.Lstat(filepath.Join(w.git.Repo.Root, filepath.FromSlash(p))); err == nil {
			add = append(add, p)
		}
	}
	if err := w.addPaths(ctx, scan, add); err != nil {
		return "", "", err
	}
	// HEAD's entries under the paths go; the scanned ones take their place.
	if _, err := w.run(ctx, gitrun.Call{Args: []string{"rm", "--cached", "-r", "-q", "--ignore-unmatch", "--pathspec-from-file=-", "--pathspec-file-nul"},
		Env: env, Stdin: gitrun.NulList(paths)}); err != nil {
		return "", "", err
	}
	res, err := w.run(ctx, gitrun.Call{Args: []string{"ls-files", "-s", "-z"}, Paths: paths, DashDash: true, Env: scan})
	if err != nil {
		return "", "", err
	}
	if len(res.Out) > 0 {
		if _, err := w.run(ctx, gitrun.Call{Args: []string{"update-index", "-z", "--index-info"}, Env: env, Stdin: res.Out}); err != nil {
			return "", "", err
		}
	}
	// In a plan, files an earlier step changed hold what it leaves.
	var over []string
	for f := range w.overlaid {
		for _, p := range paths {
			if f == p || strings.HasPrefix(f, p+"/") || p == "." {
				over = append(over, f)
				break
			}
		}
	}
	slices.Sort(over)
	if err := w.applyOverlay(ctx, env, over); err != nil {
		return "", "", err
	}
	t, err := w.writeTree(ctx, env)
	return t, idx, err
}

// clip bounds text put into messages, cutting on a line boundary where
// it can and saying so.
func clip(s string, max int) string {
	s = strings.TrimSpace(s)
	if len(s) <= max {
		return s
	}
	cut := s[:max]
	if i := strings.LastIndexByte(cut, '\n'); i > max/2 {
		cut = cut[:i]
	}
	return cut + "\n… (truncated)"
}
