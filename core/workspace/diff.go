package workspace

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
)

// Limits of Diff.
const (
	DefaultDiffBytes = 1 << 20
	MaxDiffBytes     = 16 << 20
)

// FileChange is one changed path.
type FileChange struct {
	// Status is git's letter: A added, M modified, D deleted, T type
	// changed.
	Status string `json:"status"`
	Path   string `json:"path"`
}

// DiffResult is the workspace's change against its base commit.
type DiffResult struct {
	Base  string       `json:"base"`
	Files []FileChange `json:"files"`
	Patch string       `json:"patch"`
	// Truncated is set when the patch was cut at MaxBytes (on a line
	// boundary); Files is always complete.
	Truncated bool `json:"truncated"`
}

// DiffOptions bound a diff.
type DiffOptions struct {
	// MaxBytes of patch (DefaultDiffBytes when zero, at most MaxDiffBytes).
	MaxBytes int64
}

// Diff returns the unified diff of the workspace (committed and
// uncommitted changes, untracked files included, ignored files not)
// against its base commit. The repository's own index is not touched: a
// throw-away index is used.
func (m *Manager) Diff(ctx context.Context, id string, opt DiffOptions) (*DiffResult, error) {
	limit := opt.MaxBytes
	if limit < 0 || limit > MaxDiffBytes {
		return nil, &errcode.Error{Code: errcode.InvalidArgument, Msg: "maxBytes is larger than allowed", Data: LimitData{Limit: "diffBytes", Max: MaxDiffBytes}}
	}
	if limit == 0 {
		limit = DefaultDiffBytes
	}
	w, done, err := m.openForUse(id, false, false)
	if err != nil {
		return nil, err
	}
	defer done()
	gitDir, tree := m.gitDir(id), m.treeDir(id)
	index, cleanup, err := m.scratchIndex(gitDir)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	env := []string{"GIT_INDEX_FILE=" + index}
	if _, err := m.git.run(ctx, gitCall{gitDir: gitDir, workTree: tree, env: env, args: []string{"add", "-A"}}); err != nil {
		return nil, err
	}
	base, err := m.baseTree(ctx, w)
	if err != nil {
		return nil, err
	}
	names, err := m.git.run(ctx, gitCall{gitDir: gitDir, workTree: tree, env: env, args: []string{"diff", "--cached", "--no-ext-diff", "--no-textconv", "--no-renames", "--name-status", "-z"}, revs: []string{base}, dashdash: true})
	if err != nil {
		return nil, err
	}
	res := &DiffResult{Base: w.Base, Files: parseNameStatus(names)}
	var truncated bool
	patch, err := m.git.run(ctx, gitCall{gitDir: gitDir, workTree: tree, env: env, limit: limit, truncated: &truncated,
		args: []string{"diff", "--cached", "--no-ext-diff", "--no-textconv", "--no-renames", "--no-color"}, revs: []string{base}, dashdash: true})
	if err != nil {
		return nil, err
	}
	if truncated {
		if i := bytes.LastIndexByte(patch, '\n'); i >= 0 {
			patch = patch[:i+1]
		}
		res.Truncated = true
	}
	res.Patch = string(patch)
	return res, nil
}

// scratchIndex copies the repository's index to a temporary file (so git
// can reuse its stat data, which the copy's kept time keeps trustworthy)
// and returns its path.
func (m *Manager) scratchIndex(gitDir string) (string, func(), error) {
	dir, err := os.MkdirTemp(gitDir, "index-scratch-")
	if err != nil {
		return "", nil, errcode.Wrap(errcode.Internal, err, "cannot create a scratch index")
	}
	cleanup := func() { os.RemoveAll(dir) }
	path := filepath.Join(dir, "index")
	// No index yet (nothing committed): git starts an empty one at the
	// path, which must not exist as an empty file.
	if err := gitx.CopyIndex(filepath.Join(gitDir, "index"), path); err != nil && !errors.Is(err, os.ErrNotExist) {
		cleanup()
		return "", nil, errcode.Wrap(errcode.Internal, err, "cannot create a scratch index")
	}
	return path, cleanup, nil
}

// baseTree is what diffs compare against: the base commit, or the empty
// tree for a workspace that started empty.
func (m *Manager) baseTree(ctx context.Context, w *Workspace) (string, error) {
	if w.Base != "" {
		return w.Base, nil
	}
	out, err := m.git.run(ctx, gitCall{gitDir: m.gitDir(w.ID), args: []string{"hash-object", "-t", "tree"}, paths: []string{"/dev/null"}})
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

func parseNameStatus(b []byte) []FileChange {
	out := []FileChange{}
	parts := bytes.Split(bytes.TrimSuffix(b, []byte{0}), []byte{0})
	for i := 0; i+1 < len(parts); i += 2 {
		out = append(out, FileChange{Status: string(parts[i][:1]), Path: string(parts[i+1])})
	}
	return out
}

// PathsRefused is a commit (or seal) refused because of the names of the
// files it would record; nothing was committed and the workspace stays
// open, so the files can be renamed or removed.
type PathsRefused struct {
	Findings []Finding
}

func (e *PathsRefused) Error() string {
	parts := make([]string, 0, len(e.Findings))
	for _, f := range e.Findings {
		parts = append(parts, strconv.Quote(f.Path)+": "+f.Detail)
	}
	return "these files cannot be proposed; rename or remove them in the workspace and try again: " + strings.Join(parts, "; ")
}

// pathsRefused is the typed error of a refused commit: proposal_refused
// with the findings as its data, and the *PathsRefused beneath.
func pathsRefused(fs []Finding) error {
	pr := &PathsRefused{Findings: fs}
	return &errcode.Error{Code: errcode.ProposalRefused, Msg: pr.Error(), Data: map[string]any{"findings": fs}, Err: pr}
}

// CommitResult says what Commit did.
type CommitResult struct {
	Commit string `json:"commit"`
	// Changed is false when there was nothing to commit; Commit is then
	// the current head.
	Changed bool         `json:"changed"`
	Files   []FileChange `json:"files,omitempty"`
}

const maxCommitMessage = 64 << 10

// Commit records every change in the tree (untracked files included,
// ignored files not) as a commit in the workspace repository, authored by
// "Sluice workspace <workspace@sluice.invalid>". The commit stays in the
// workspace; sealing hands it off.
func (m *Manager) Commit(ctx context.Context, id, message string) (*CommitResult, error) {
	w, unlock, err := m.open(id, true, true)
	if err != nil {
		return nil, err
	}
	defer unlock()
	res, err := m.commitLocked(ctx, w, message)
	if err != nil || !res.Changed {
		// A new commit renewed the lease with its record already.
		m.touch(w, true)
	}
	return res, err
}

func (m *Manager) commitLocked(ctx context.Context, w *Workspace, message string) (*CommitResult, error) {
	message = strings.TrimSpace(message)
	if message == "" || len(message) > maxCommitMessage || strings.ContainsRune(message, 0) {
		return nil, errcode.New(errcode.InvalidArgument, "a commit message must be 1 to %d bytes without NUL", maxCommitMessage)
	}
	gitDir, tree := m.gitDir(w.ID), m.treeDir(w.ID)
	if _, err := m.git.run(ctx, gitCall{gitDir: gitDir, workTree: tree, args: []string{"add", "-A"}}); err != nil {
		return nil, err
	}
	raw, err := m.git.run(ctx, gitCall{gitDir: gitDir, workTree: tree, args: []string{"diff", "--cached", "--no-renames", "--raw", "-z"}})
	if err != nil {
		return nil, err
	}
	changes := parseRawDiff(raw)
	if len(changes) == 0 {
		return &CommitResult{Commit: w.Head}, nil
	}
	// A name no proposal may carry never enters the history: once
	// committed, it would stay in every later handoff (git's fsck refuses
	// a commit with a .gitmodules directory even when a later one removes
	// it), and the workspace could never be proposed.
	// Only a workspace made from a repository is ever proposed.
	files := make([]FileChange, 0, len(changes))
	var refused []Finding
	for _, ch := range changes {
		files = append(files, FileChange{Status: ch.status, Path: ch.path})
		if w.Source.Kind != SourceRepo {
			continue
		}
		if f := m.pathFinding(w.Source.Path, ch.path, ch.newMode); f != nil {
			refused = append(refused, *f)
		}
	}
	if len(refused) > 0 {
		return nil, pathsRefused(refused)
	}
	if _, err := m.git.run(ctx, gitCall{gitDir: gitDir, workTree: tree, stdin: strings.NewReader(message + "\n"),
		args: []string{"commit", "-q", "--no-verify", "--no-gpg-sign", "--cleanup=verbatim", "-F", "-"}}); err != nil {
		return nil, err
	}
	out, err := m.git.run(ctx, gitCall{gitDir: gitDir, args: []string{"rev-parse", "--verify", "HEAD^{commit}"}})
	if err != nil {
		return nil, err
	}
	// The new head is recorded at once (and the lease renewed with it): a
	// crash must not leave the record behind the repository.
	w.Head, w.LastUsedAt = strings.TrimSpace(string(out)), m.now()
	if err := m.writeMeta(w); err != nil {
		return nil, err
	}
	return &CommitResult{Commit: w.Head, Changed: true, Files: files}, nil
}

var fetchRefRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^refs/sluice/[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*$`) })

// FetchInto fetches the workspace's head commit (and what it needs) from
// the workspace repository into personRepo at ref, which must be under
// refs/sluice/. It is the seam the executor uses to turn a sealed
// workspace into a proposal: only objects move, the person's working tree
// and branches are untouched, every object received is checked
// (transfer.fsckObjects) because a container wrote it, and no hook, fsmonitor
// or credential helper runs. An existing ref is never overwritten.
func (m *Manager) FetchInto(ctx context.Context, id, personRepo, ref string) (string, error) {
	if !fetchRefRe().MatchString(ref) || len(ref) > 255 {
		return "", errcode.New(errcode.InvalidArgument, "ref must be under refs/sluice/ (letters, digits, _ and - per component)")
	}
	repo, err := m.confineSource(personRepo)
	if err != nil {
		return "", err
	}
	w, unlock, err := m.open(id, true, false)
	if err != nil {
		return "", err
	}
	defer unlock()
	if w.Head == "" {
		return "", errcode.New(errcode.InvalidArgument, "the workspace has no commit to hand off")
	}
	gitDir := m.gitDir(id)
	if _, err := m.git.run(ctx, gitCall{gitDir: gitDir, args: []string{"update-ref", "--no-deref"}, revs: []string{"refs/sluice/head", w.Head}}); err != nil {
		return "", err
	}
	_, err = m.git.run(ctx, gitCall{
		dir:         repo,
		allowFile:   true,
		safeDirs:    []string{repo, gitDir},
		extraConfig: []string{"transfer.fsckObjects=true", "fetch.writeCommitGraph=false"},
		args:        []string{"fetch", "-q", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules"},
		revs:        []string{gitDir, "refs/sluice/head:" + ref},
	})
	if err != nil {
		return "", err
	}
	out, err := m.git.run(ctx, gitCall{dir: repo, safeDirs: []string{repo}, args: []string{"rev-parse", "--verify"}, revs: []string{ref + "^{commit}"}})
	if err != nil {
		return "", err
	}
	got := strings.TrimSpace(string(out))
	if got != w.Head {
		return "", &errcode.Error{Code: errcode.GitFailed, Msg: "the fetched ref does not point at the workspace head (it existed already)"}
	}
	return got, nil
}

// RemoveHandoff deletes ref from the person's repository when it still
// points at the workspace's head: what FetchInto made for a proposal that
// the app then refused. A ref that is gone is not an error; one that
// points elsewhere is not Sluice's to remove and stays.
func (m *Manager) RemoveHandoff(ctx context.Context, id, personRepo, ref string) error {
	if !fetchRefRe().MatchString(ref) || len(ref) > 255 {
		return errcode.New(errcode.InvalidArgument, "ref must be under refs/sluice/ (letters, digits, _ and - per component)")
	}
	repo, err := m.confineSource(personRepo)
	if err != nil {
		return err
	}
	w, unlock, err := m.open(id, true, false)
	if err != nil {
		return err
	}
	defer unlock()
	out, err := m.git.run(ctx, gitCall{dir: repo, safeDirs: []string{repo}, args: []string{"for-each-ref", "--format=%(objectname)"}, revs: []string{ref}})
	if err != nil {
		return err
	}
	got := strings.TrimSpace(string(out))
	if got == "" || got != w.Head {
		return nil
	}
	_, err = m.git.run(ctx, gitCall{dir: repo, safeDirs: []string{repo}, args: []string{"update-ref", "--no-deref", "-d"}, revs: []string{ref, got}})
	return err
}
