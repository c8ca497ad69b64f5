package workspace

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
)

// The workspace's git runs through core/gitx under gitx.ProfileHostileTree:
// it writes (clone, commit, fetch), and it must treat every workspace tree
// as hostile, since a container wrote it. The repository itself lives
// outside the tree and is mounted read-only into the container, so its
// config and hooks are Sluice's; what the container controls are the files
// (.gitattributes, .gitmodules, nested .git directories), and the profile
// keeps git from executing anything those name. Its environment is built
// from nothing (no GIT_* variable, proxy, askpass or agent socket of the
// host process reaches git), HOME is the Manager's own directory, and the
// identity of its commits is the workspace's, not the person's: those
// commits are proposals, and the person's identity is applied only when a
// human approves them.

const gitTimeout = 5 * time.Minute

type gitRunner struct {
	r    *gitx.Runner
	home string
}

// newGitRunner finds git as gitx does (an absolute PATH entry, symlinks
// resolved) and holds it to gitx's minimum version.
func newGitRunner(path, home string) (*gitRunner, error) {
	if path != "" && !filepath.IsAbs(path) {
		return nil, errcode.New(errcode.InvalidArgument, "the git path must be absolute")
	}
	// The process-wide runner when git is found on PATH: its version is
	// read once for every package.
	r, err := gitx.Default()
	if path != "" {
		r, err = gitx.NewRunner(gitx.RunnerOptions{GitPath: path})
	}
	if err != nil {
		return nil, &errcode.Error{Code: errcode.Unsupported, Msg: "workspaces cannot use git: " + err.Error(), Err: err}
	}
	return &gitRunner{r: r, home: home}, nil
}

// gitCall is one git invocation.
type gitCall struct {
	gitDir   string // --git-dir (explicit, so no discovery ever runs)
	workTree string // --work-tree
	dir      string // working directory (defaults to gitDir)
	// args are the subcommand, its options and Sluice's own constants;
	// revisions go in revs and paths in paths, which gitx places after
	// --end-of-options and "--" and checks (gitx.Call).
	args     []string
	revs     []string
	paths    []string
	dashdash bool
	env      []string // extra environment
	stdin    io.Reader
	// stdout, when set, receives stdout instead of the returned buffer.
	stdout io.Writer
	// allowFile permits the file transport (clone and fetch between local
	// repositories); every other transport stays refused.
	allowFile bool
	// extraConfig is appended after the profile's settings (it may not
	// replace one).
	extraConfig []string
	// safeDirs are repositories owned by another user that git may still
	// open (Sluice as root reading a person's repository, or a person's
	// fetch reading a tree handed to the container user). They go into a
	// throw-away global config file (gitx does that), because git does
	// not pass -c options to the upload-pack it starts for a local fetch.
	safeDirs []string
	// limit caps stdout (0: 64 MiB); past it the call fails, unless
	// truncated is set: then the first limit bytes are returned and
	// *truncated reports that there was more.
	limit     int64
	truncated *bool
	timeout   time.Duration
}

func (g *gitRunner) run(ctx context.Context, c gitCall) ([]byte, error) {
	var global []string
	if c.gitDir != "" {
		global = append(global, "--git-dir="+c.gitDir)
	}
	if c.workTree != "" {
		global = append(global, "--work-tree="+c.workTree)
	}
	dir := c.dir
	if dir == "" {
		dir = c.gitDir
	}
	if dir == "" {
		dir = g.home
	}
	timeout := c.timeout
	if timeout <= 0 {
		timeout = gitTimeout
	}
	out, err := g.r.Run(ctx, gitx.Call{
		Profile:            gitx.ProfileHostileTree,
		Dir:                dir,
		Global:             global,
		Args:               c.args,
		Revs:               gitx.Revs(c.revs...),
		Paths:              gitx.Paths(c.paths...),
		DashDash:           c.dashdash,
		Config:             c.extraConfig,
		AllowFileTransport: c.allowFile,
		SafeDirs:           c.safeDirs,
		Env:                append([]string{"HOME=" + g.home}, c.env...),
		Stdin:              c.stdin,
		Stdout:             c.stdout,
		Limit:              c.limit,
		Truncate:           c.truncated != nil,
		Timeout:            timeout,
	})
	var stdout []byte
	if out != nil {
		stdout = out.Stdout
		if c.truncated != nil {
			*c.truncated = out.Truncated
		}
	}
	if err == nil {
		return stdout, nil
	}
	// gitx classifies what git answered (and passes through what it
	// refused or stopped: a bad operand, a timeout, output_limit).
	if err = gitx.Classify(err); errcode.Of(err) != errcode.Internal {
		return stdout, err
	}
	// A git that did not run to an answer (cancelled, not started).
	name := gitCommandName(c.args)
	return nil, &errcode.Error{Code: errcode.GitFailed, Msg: "git " + name + " failed",
		Data: errcode.GitFailure{Command: name, ExitCode: -1}, Err: err}
}

// pipe runs from | to: two git processes connected by an OS pipe.
func (g *gitRunner) pipe(ctx context.Context, from, to gitCall) error {
	r, w, err := os.Pipe()
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot create a pipe")
	}
	from.stdout, to.stdin = w, r
	errc := make(chan error, 1)
	go func() {
		_, err := g.run(ctx, from)
		w.Close()
		errc <- err
	}()
	_, err = g.run(ctx, to)
	r.Close()
	if ferr := <-errc; ferr != nil && err == nil {
		err = ferr
	}
	return err
}

func gitCommandName(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return "?"
}

// gitExitCode is the exit code of a classified git failure (whatever its
// code), or -1 when git did not answer.
func gitExitCode(err error) int {
	var e *errcode.Error
	if errors.As(err, &e) {
		if f, ok := e.Data.(errcode.GitFailure); ok {
			return f.ExitCode
		}
	}
	return -1
}
