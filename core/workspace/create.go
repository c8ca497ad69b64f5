package workspace

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
)

// CreateRequest asks for a new workspace.
type CreateRequest struct {
	// ID names the workspace; empty generates one.
	ID     string
	Source Source
	// Lease overrides the default idle lease.
	Lease time.Duration
	// Agent is attribution (the MCP client name).
	Agent string
}

// Create imports a source into a new workspace. Nothing runs in a
// container yet; the tree is handed to the container user.
func (m *Manager) Create(ctx context.Context, req CreateRequest) (*Workspace, error) {
	id, src, err := m.checkCreateRequest(req)
	if err != nil {
		return nil, err
	}
	unlock, err := m.makeWorkspaceDir(id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	w := m.newWorkspace(id, src, req)
	if err := m.build(ctx, w); err != nil {
		m.removeWorkspaceDir(id)
		return nil, err
	}
	m.log.Info("workspace: created", "workspace", id, "source", string(src.Kind), "base", w.Base)
	return w, nil
}

// checkCreateRequest returns the new workspace's id, generated if the
// request names none, and its source with the path canonicalised.
func (m *Manager) checkCreateRequest(req CreateRequest) (string, Source, error) {
	id := req.ID
	if id == "" {
		id = strings.ReplaceAll(uuid.NewString(), "-", "")
	}
	if !proposal.ValidID(id) {
		return "", Source{}, ErrInvalidID
	}
	if req.Lease < 0 || req.Lease > 7*24*time.Hour {
		return "", Source{}, errcode.New(errcode.InvalidArgument, "lease must be between 0 and 168h")
	}
	src, err := m.checkSource(req.Source)
	if err != nil {
		return "", Source{}, err
	}
	return id, src, nil
}

func (m *Manager) checkSource(src Source) (Source, error) {
	switch src.Kind {
	case SourceRepo, SourceSnapshot:
		canon, err := m.confineSource(src.Path)
		if err != nil {
			return Source{}, err
		}
		src.Path = canon
	case SourceFresh:
		if src.Path != "" || src.Commit != "" {
			return Source{}, errcode.New(errcode.InvalidArgument, "a fresh workspace takes no path or commit")
		}
	default:
		return Source{}, errcode.New(errcode.InvalidArgument, "source kind must be repo, snapshot or fresh")
	}
	if src.Kind != SourceRepo && (src.Commit != "" || src.Depth != 0) {
		return Source{}, errcode.New(errcode.InvalidArgument, "commit and depth apply to repo sources only")
	}
	if src.Depth < 0 || src.Depth > 1_000_000 {
		return Source{}, errcode.New(errcode.InvalidArgument, "depth must be between 0 and 1000000")
	}
	if err := checkRevision(src.Commit); err != nil {
		return Source{}, err
	}
	return src, nil
}

// makeWorkspaceDir makes the workspace directory and its lock file, and
// takes the lock. The directory is new, so a second Create of the same id
// fails here rather than sharing it.
func (m *Manager) makeWorkspaceDir(id string) (unlock func(), err error) {
	m.dirMu.RLock()
	defer m.dirMu.RUnlock()
	dir := m.dir(id)
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, errcode.New(errcode.InvalidArgument, "a workspace with this id already exists")
		}
		return nil, errcode.Wrap(errcode.Internal, err, "cannot create the workspace directory")
	}
	lockFile, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE|os.O_EXCL|noFollowFlag, 0o600)
	if err != nil {
		os.RemoveAll(dir)
		return nil, errcode.Wrap(errcode.Internal, err, "cannot create the workspace lock")
	}
	lockFile.Close()
	unlock, err = m.lockWS(id, true)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return unlock, nil
}

func (m *Manager) newWorkspace(id string, src Source, req CreateRequest) *Workspace {
	now := m.now()
	lease := req.Lease
	if lease == 0 {
		lease = m.opts.Lease
	}
	return &Workspace{
		ID:         id,
		State:      StateCreating,
		Source:     src,
		GitVisible: src.Kind == SourceRepo || src.GitInit,
		Agent:      sanitizeAgent(req.Agent),
		CreatedAt:  now,
		LastUsedAt: now,
		Lease:      lease,
	}
}

// build records the workspace as creating, imports its source and
// records it ready. The caller removes the directory if it fails.
func (m *Manager) build(ctx context.Context, w *Workspace) error {
	if err := m.writeMeta(w); err != nil {
		return err
	}
	if err := m.populate(ctx, w); err != nil {
		return err
	}
	w.State = StateReady
	w.Head = w.Base
	w.LastUsedAt = m.now()
	return m.writeMeta(w)
}

func (m *Manager) populate(ctx context.Context, w *Workspace) error {
	tree, gitDir := m.treeDir(w.ID), m.gitDir(w.ID)
	if err := os.Mkdir(tree, 0o755); err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot create the workspace tree")
	}
	// --template= keeps the sample hooks and other template files out.
	if _, err := m.git.run(ctx, gitCall{args: []string{"init", "-q", "--bare", "--template="}, paths: []string{gitDir}}); err != nil {
		return err
	}
	if _, err := m.git.run(ctx, gitCall{gitDir: gitDir, args: []string{"config", "core.bare", "false"}}); err != nil {
		return err
	}
	switch w.Source.Kind {
	case SourceRepo:
		if err := m.importRepo(ctx, w, tree, gitDir); err != nil {
			return err
		}
	case SourceSnapshot:
		files, size, skipped, err := m.copySnapshot(w.Source.Path, tree)
		if err != nil {
			return err
		}
		w.Files, w.Bytes, w.Skipped = files, size, skipped
		// The snapshot becomes the base commit so that Diff shows exactly
		// what changed since the import. -f takes ignored files too: they
		// were imported, so they are part of the base.
		if _, err := m.git.run(ctx, gitCall{gitDir: gitDir, workTree: tree, args: []string{"add", "-A", "-f"}}); err != nil {
			return err
		}
		if _, err := m.git.run(ctx, gitCall{gitDir: gitDir, workTree: tree, args: []string{"commit", "-q", "--no-verify", "--allow-empty", "-m", "Snapshot import"}}); err != nil {
			return err
		}
		out, err := m.git.run(ctx, gitCall{gitDir: gitDir, args: []string{"rev-parse", "--verify", "HEAD^{commit}"}})
		if err != nil {
			return err
		}
		w.Base = strings.TrimSpace(string(out))
	case SourceFresh:
	}
	if w.GitVisible {
		// Mount point of the read-only repository inside the container.
		if err := os.Mkdir(filepath.Join(tree, ".git"), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return errcode.Wrap(errcode.Internal, err, "cannot create the repository mount point")
		}
	}
	return m.handOver(tree, gitDir, w.Source.Kind == SourceRepo)
}

// importRepo fetches exactly the base commit (and its history) from the
// person's repository into the workspace repository and checks it out,
// detached. Only objects reachable from that commit are copied: no other
// branch, no stash, no unreachable object, no remote, no config and no
// hook of the person's repository comes along. The objects are copied,
// never hard-linked, so nothing in the workspace shares an inode with the
// person's repository.
func (m *Manager) importRepo(ctx context.Context, w *Workspace, tree, gitDir string) error {
	srcGit, srcCommon, err := m.sourceGitDirs(ctx, w.Source.Path)
	if err != nil {
		return err
	}
	sha, err := m.resolveBase(ctx, srcGit, w.Source.Commit)
	if err != nil {
		return err
	}
	w.Base = sha
	_, err = os.Stat(filepath.Join(srcCommon, "shallow"))
	srcShallow := err == nil
	if w.Source.Depth > 0 || srcShallow {
		return m.fetchBase(ctx, srcGit, sha, w.Source.Depth, tree, gitDir)
	}
	return m.copyBase(ctx, srcGit, srcCommon, sha, tree, gitDir)
}

// sourceGitDirs returns the git directory and the common git directory of
// the person's repository at src.
func (m *Manager) sourceGitDirs(ctx context.Context, src string) (gitDir, commonDir string, err error) {
	out, err := m.git.run(ctx, gitCall{dir: src, args: []string{"rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir"}, safeDirs: []string{src}})
	if err != nil {
		return "", "", &errcode.Error{Code: errcode.NotARepository, Msg: "the source path is not a git repository", Err: err}
	}
	dirs := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(dirs) != 2 {
		return "", "", &errcode.Error{Code: errcode.NotARepository, Msg: "the source path is not a git repository"}
	}
	return dirs[0], dirs[1], nil
}

// resolveBase returns the commit the workspace starts from: commit, or the
// source's HEAD when commit is empty.
func (m *Manager) resolveBase(ctx context.Context, srcGit, commit string) (string, error) {
	rev := commit
	if rev == "" {
		rev = "HEAD"
	}
	out, err := m.git.run(ctx, gitCall{gitDir: srcGit, safeDirs: []string{srcGit}, args: []string{"rev-parse", "--verify", "--quiet"}, revs: []string{rev + "^{commit}"}})
	if err != nil {
		return "", errcode.New(errcode.InvalidArgument, "the commit %q does not exist in the repository", commit)
	}
	return strings.TrimSpace(string(out)), nil
}

func checkoutBase(gitDir, tree, sha string) gitCall {
	return gitCall{gitDir: gitDir, workTree: tree, args: []string{"checkout", "-q", "--detach", sha, "--"}}
}

// fetchBase imports a shallow history (depth commits deep, or as deep as
// the shallow source is) with a real fetch: it records where shallow
// history ends, which a bare pack copy would not.
func (m *Manager) fetchBase(ctx context.Context, srcGit, sha string, depth int, tree, gitDir string) error {
	fetch := []string{"fetch", "-q", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules"}
	if depth > 0 {
		fetch = append(fetch, "--depth="+strconv.Itoa(depth))
	} else {
		// Take over the source's own shallow boundary.
		fetch = append(fetch, "--update-shallow")
	}
	if _, err := m.git.run(ctx, gitCall{gitDir: gitDir, args: fetch, revs: []string{srcGit, sha}, allowFile: true, safeDirs: []string{srcGit}}); err != nil {
		return err
	}
	if _, err := m.git.run(ctx, checkoutBase(gitDir, tree, sha)); err != nil {
		return err
	}
	return m.handOverTree(tree)
}

// copyBase imports the whole history of the base. The copy of the objects
// and the checkout run side by side: the pack of everything reachable
// from the base streams from the person's repository into the
// workspace's (what a fetch would do, without its negotiation), while the
// checkout reads the same objects from the person's object store, given
// to that one process as a read-only alternate. The workspace repository
// itself never gets an alternates file, so it ends self-contained.
func (m *Manager) copyBase(ctx context.Context, srcGit, srcCommon, sha, tree, gitDir string) error {
	var copying errgroup.Group
	copying.Go(func() error {
		return m.git.pipe(ctx,
			gitCall{gitDir: srcGit, stdin: strings.NewReader(sha + "\n"), args: []string{"pack-objects", "--revs", "--stdout", "-q", "--delta-base-offset"}},
			gitCall{gitDir: gitDir, args: []string{"index-pack", "--stdin"}})
	})
	// The checkout stays on this goroutine, so that when both fail the
	// copy's error is the one returned.
	checkout := checkoutBase(gitDir, tree, sha)
	checkout.env = []string{"GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(srcCommon, "objects")}
	_, coErr := m.git.run(ctx, checkout)
	if coErr == nil {
		// The tree is complete: hand it over while the objects may still
		// be copying.
		coErr = m.handOverTree(tree)
	}
	if err := copying.Wait(); err != nil {
		return err
	}
	if coErr != nil {
		return coErr
	}
	// The commit and its tree must now be in the workspace's own store.
	if _, err := m.git.run(ctx, gitCall{gitDir: gitDir, args: []string{"cat-file", "-e"}, revs: []string{sha + "^{tree}"}}); err != nil {
		return errcode.Wrap(errcode.Internal, err, "the workspace repository is incomplete after the import")
	}
	return nil
}

// handOver gives the tree's top and the repository to the container user
// when Sluice runs as root (git inside the container refuses a repository
// or work tree owned by someone else). What is inside the tree was handed
// over as it was made: per file for a snapshot, by a walk right after a
// checkout. Only Sluice has written these paths so far, so plain path calls
// are race-free here.
func (m *Manager) handOver(tree, gitDir string, walkGit bool) error {
	if !m.own.chown {
		return nil
	}
	for _, p := range []string{tree, filepath.Join(tree, ".git"), gitDir} {
		if err := os.Lchown(p, m.own.uid, m.own.gid); err != nil && !errors.Is(err, os.ErrNotExist) {
			return errcode.Wrap(errcode.Internal, err, "cannot hand the workspace to the container user")
		}
	}
	if walkGit {
		if err := chownTree(gitDir, m.own.uid, m.own.gid); err != nil {
			return errcode.Wrap(errcode.Internal, err, "cannot hand the workspace to the container user")
		}
	}
	return nil
}

// handOverTree walks a fresh checkout.
func (m *Manager) handOverTree(tree string) error {
	if !m.own.chown {
		return nil
	}
	if err := chownTree(tree, m.own.uid, m.own.gid); err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot hand the workspace to the container user")
	}
	return nil
}

// confineSource canonicalises a source path and applies AllowedRoots.
func (m *Manager) confineSource(p string) (string, error) {
	if p == "" || !filepath.IsAbs(p) || strings.ContainsRune(p, 0) {
		return "", errcode.New(errcode.InvalidArgument, "the source path must be absolute")
	}
	if m.opts.AllowedRoots != nil {
		canon, err := m.opts.AllowedRoots.Confine(p)
		if err == nil {
			// Its git directory and common directory are confined too: a
			// .git file inside the roots may name a repository outside.
			err = m.opts.AllowedRoots.ConfineGitDirs(canon)
		}
		if err != nil {
			return "", &errcode.Error{Code: errcode.Of(err), Msg: err.Error(), Err: err}
		}
		return canon, nil
	}
	canon, err := filepath.EvalSymlinks(filepath.Clean(p))
	if err != nil {
		return "", errcode.New(errcode.InvalidArgument, "the source path does not exist")
	}
	st, err := os.Stat(canon)
	if err != nil || !st.IsDir() {
		return "", errcode.New(errcode.InvalidArgument, "the source path is not a directory")
	}
	return canon, nil
}

// checkRevision keeps a revision from being read as an option or from
// carrying bytes git would misread (gitx.CheckRev); empty means the
// default.
func checkRevision(rev string) error {
	if rev == "" {
		return nil
	}
	if err := gitx.CheckRev("commit", rev); err != nil {
		return &errcode.Error{Code: errcode.Of(err), Msg: err.Error(), Err: err}
	}
	return nil
}

func sanitizeAgent(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 128 {
			break
		}
		if r < 0x80 && (r == '.' || r == '_' || r == ':' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// removeWorkspaceDir deletes a workspace directory. Files the container
// made read-only (a directory without write permission) would stop
// os.RemoveAll for a non-root Sluice, so permissions are opened first.
func (m *Manager) removeWorkspaceDir(id string) error {
	dir := m.dir(id)
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Type()&fs.ModeSymlink == 0 {
			_ = os.Chmod(path, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(dir); err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot remove the workspace directory")
	}
	return nil
}
