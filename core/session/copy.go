package session

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
)

// The private copy. A session's agent works in a repository of its own,
// made at the person's HEAD and mounted at the person's repository's path,
// so that its own tools work unchanged. It shares nothing writable with
// the person's repository: its refs, index, config and new objects are its
// own, and the person's objects are borrowed read-only through an
// alternate (objects/info/alternates names "../sluice-origin", relative to
// the copy's object directory, i.e. <copy>/.git/sluice-origin).
//
// That directory is empty on disk. Inside the sandbox, and in the view the
// session's sidecar has, the person's object directory is bound read-only
// onto it; Sluice's own git on the host passes the person's object
// directory in GIT_ALTERNATE_OBJECT_DIRECTORIES instead. A plain absolute
// alternate could not work: inside the sandbox the person's repository
// path is the copy. A linked `git worktree` is refused by design: it
// shares the person's refs and object store, writable.
//
// The skeleton of the repository (HEAD, config, packed-refs, alternates)
// is written here rather than by `git init` and `git update-ref`: they are
// a handful of small files in git's documented formats
// (gitrepository-layout(5)), and writing them takes no process, which
// keeps the start of a session short. The checkout is git's own
// (read-tree -u), in parallel.

// OriginAlternate is the directory, inside the copy's git directory, that
// the person's object directory is seen at.
const OriginAlternate = "sluice-origin"

// Copy describes a private copy that MakeCopy made.
type Copy struct {
	// Dir is the copy's working tree (its git directory is Dir/.git).
	Dir string
	// Repo is the person's repository (canonical working-tree root).
	Repo string
	// Objects is the person's object directory, canonical.
	Objects string
	// Base is the commit checked out; Branch the branch HEAD is on ("" when
	// detached).
	Base, Branch string
	// Files is the number of files checked out.
	Files int
}

// OriginEnv is the environment Sluice's own git needs on the host to read
// the copy's objects (see the comment at the top of this file).
func (c *Copy) OriginEnv() []string {
	return []string{"GIT_ALTERNATE_OBJECT_DIRECTORIES=" + c.Objects}
}

// MakeCopy makes a private copy of the repository that contains dir at
// its HEAD in dest, which must not exist yet. home is the HOME Sluice's git
// runs with for the copy (a directory of Sluice's own, with no
// configuration). Nothing in the person's repository is written.
func MakeCopy(ctx context.Context, r *gitx.Runner, roots gitx.Roots, dir, dest, home string) (*Copy, error) {
	repo, err := r.Open(ctx, roots, dir)
	if err != nil {
		return nil, err
	}
	if repo.Bare {
		return nil, errcode.New(errcode.InvalidArgument, "a confined session needs a working tree; %s is a bare repository", filepath.Base(repo.Root))
	}
	c := &Copy{Dir: dest, Repo: repo.Root}
	if c.Objects, err = filepath.EvalSymlinks(filepath.Join(repo.CommonDir, "objects")); err != nil {
		return nil, errcode.Wrap(errcode.NotARepository, err, "the repository has no object directory")
	}
	refs, err := readRefs(ctx, repo)
	if err != nil {
		return nil, err
	}
	c.Base, c.Branch = refs.head, refs.branch
	if c.Base == "" {
		return nil, errcode.New(errcode.InvalidArgument, "the repository has no commit yet; commit once before starting a confined session in it")
	}
	if err := writeSkeleton(dest, repo, refs); err != nil {
		removeAll(dest)
		return nil, errcode.Wrap(errcode.Internal, err, "cannot write the session's copy: %v", err)
	}
	out, err := r.Run(ctx, gitx.Call{
		Profile: gitx.ProfileHostileTree,
		Dir:     dest,
		Global:  []string{"--git-dir=" + filepath.Join(dest, ".git"), "--work-tree=" + dest},
		// Parallel checkout: most of a large copy's time is writing files.
		Config: []string{"checkout.workers=0", "checkout.thresholdForParallelism=100"},
		Args:   []string{"read-tree", "--reset", "-u", "HEAD"},
		Env:    append([]string{"HOME=" + home}, c.OriginEnv()...),
	})
	if err != nil {
		removeAll(dest)
		return nil, copyError(err, out)
	}
	c.Files = refs.files
	return c, nil
}

func copyError(err error, out *gitx.Output) error {
	if e, ok := errcode.As(err); ok && e.Code != errcode.Internal {
		return err
	}
	msg := err.Error()
	if ee, ok := err.(*gitx.ExitError); ok {
		msg = strings.TrimSpace(ee.Stderr)
	}
	_ = out
	return errcode.Wrap(errcode.GitFailed, err, "git could not check the copy out: %s", clip(msg, 400))
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// refState is what the copy takes of the person's refs.
type refState struct {
	head, branch string
	// packed are "<sha> <ref>" lines, sorted by ref: local branches, tags
	// and remote-tracking branches (never refs/sluice/, refs/stash or
	// notes: nothing of Sluice's own or of the person's scratch).
	packed []string
	files  int
}

func readRefs(ctx context.Context, repo *gitx.Repo) (refState, error) {
	var rs refState
	out, err := repo.Run(ctx, gitx.Call{Profile: gitx.ProfileRead, Args: []string{"for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/", "refs/tags/", "refs/remotes/"}})
	if err != nil {
		return rs, err
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out.Stdout)), "\n") {
		if sha, ref, ok := strings.Cut(l, " "); ok && gitx.ValidFullSHA(sha) && !strings.ContainsAny(ref, " \t\r\n") {
			rs.packed = append(rs.packed, l)
		}
	}
	// HEAD: the branch it is on (empty when detached), and its commit.
	head, err := repo.Run(ctx, gitx.Call{Profile: gitx.ProfileRead, Args: []string{"rev-parse", "HEAD", "--symbolic-full-name", "HEAD"}, OK: []int{128}})
	if err != nil {
		return rs, err
	}
	lines := strings.Fields(string(head.Stdout))
	switch {
	case head.ExitCode != 0 && strings.Contains(head.Stderr, "unknown revision"):
		// An unborn branch: no commit to copy.
		return rs, nil
	case head.ExitCode != 0 || len(lines) == 0:
		return rs, errcode.New(errcode.GitFailed, "cannot read HEAD: %s", clip(head.Stderr, 200))
	default:
		rs.head = lines[0]
		if len(lines) > 1 && strings.HasPrefix(lines[1], "refs/heads/") {
			rs.branch = lines[1]
		}
	}
	if !gitx.ValidFullSHA(rs.head) {
		return rs, errcode.New(errcode.GitFailed, "HEAD did not resolve to a commit")
	}
	n, err := repo.Run(ctx, gitx.Call{Profile: gitx.ProfileRead, Args: []string{"ls-tree", "-r", "--name-only", "-z", "--end-of-options", rs.head}, Limit: 256 << 20})
	if err != nil {
		return rs, err
	}
	rs.files = bytes.Count(n.Stdout, []byte{0})
	return rs, nil
}

// writeSkeleton writes the copy's git directory: HEAD, a config of its
// own (the person's is never copied: it can hold credentials in remote
// URLs, hooks paths and helpers), the refs as packed-refs, the shallow
// boundary if the person's repository is shallow, and the alternate.
func writeSkeleton(dest string, repo *gitx.Repo, rs refState) error {
	gitDir := filepath.Join(dest, ".git")
	for _, d := range []string{dest, gitDir, filepath.Join(gitDir, "objects", "info"), filepath.Join(gitDir, "objects", "pack"),
		filepath.Join(gitDir, "refs", "heads"), filepath.Join(gitDir, "refs", "tags"), filepath.Join(gitDir, OriginAlternate)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	head := rs.head + "\n"
	if rs.branch != "" {
		head = "ref: " + rs.branch + "\n"
	}
	format := repo.ObjectFormat
	if format == "" {
		format = "sha1"
	}
	cfg := "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n"
	if format != "sha1" {
		cfg = "[core]\n\trepositoryformatversion = 1\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n[extensions]\n\tobjectformat = " + format + "\n"
	}
	// No header: git then reads the file without assuming any trait.
	var packed strings.Builder
	for _, l := range rs.packed {
		packed.WriteString(l)
		packed.WriteByte('\n')
	}
	files := map[string]string{
		"HEAD":                    head,
		"config":                  cfg,
		"description":             "A confined session's private copy (Sluice).\n",
		"packed-refs":             packed.String(),
		"objects/info/alternates": "../" + OriginAlternate + "\n",
	}
	if b, err := os.ReadFile(filepath.Join(repo.CommonDir, "shallow")); err == nil {
		files["shallow"] = string(b)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(gitDir, name), []byte(body), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}
