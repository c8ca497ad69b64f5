package workspace

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/gitx"
)

// The workspace's own git runner. It differs from gitx's read-only runner:
// it writes (clone, commit, fetch), and it must treat every workspace tree
// as hostile, since a container wrote it. The repository itself lives
// outside the tree and is mounted read-only into the container, so its
// config and hooks are Sluice's; what the container controls are the files
// (.gitattributes, .gitmodules, nested .git directories), and the
// hardening below keeps git from executing anything those name.

const (
	gitTimeout   = 5 * time.Minute
	gitStderrCap = 16 << 10
	// Identity of commits made inside a workspace. It is not the person's:
	// those commits are proposals, and the person's identity is applied
	// only when a human approves them.
	commitName  = "Sluice workspace"
	commitEmail = "workspace@sluice.invalid"
)

// gitHardening is passed as -c to every git process. Command-line config
// is read after every config file, so nothing a repository or a user file
// says can override it.
var gitHardening = []string{
	"core.hooksPath=/dev/null",
	"core.fsmonitor=false",
	"core.pager=cat",
	"core.askPass=",
	"core.sshCommand=",
	"credential.helper=",
	"protocol.allow=never",
	"protocol.ext.allow=never",
	"gc.auto=0",
	"maintenance.auto=false",
	"commit.gpgSign=false",
	"tag.gpgSign=false",
	"submodule.recurse=false",
	"fetch.recurseSubmodules=false",
	"core.quotePath=false",
	"core.autocrlf=false",
	"core.symlinks=true",
	"color.ui=false",
	"advice.detachedHead=false",
	"init.defaultBranch=main",
	"user.useConfigOnly=false",
	"diff.noprefix=false",
	"diff.mnemonicPrefix=false",
	"diff.relative=false",
}

type gitRunner struct {
	path string
	home string
}

// newGitRunner finds git as gitx does (an absolute PATH entry, symlinks
// resolved) and holds it to gitx's minimum version.
func newGitRunner(path, home string) (*gitRunner, error) {
	if path != "" && !filepath.IsAbs(path) {
		return nil, invalidArg("the git path must be absolute")
	}
	// The process-wide runner when git is found on PATH: its version is
	// read once for every package.
	r, err := gitx.Default()
	if path != "" {
		r, err = gitx.NewRunner(gitx.RunnerOptions{GitPath: path})
	}
	if err != nil {
		return nil, &Error{Code: CodeUnsupported, Msg: "workspaces cannot use git: " + err.Error(), Err: err}
	}
	return &gitRunner{path: r.Path(), home: home}, nil
}

// gitCall is one git invocation.
type gitCall struct {
	gitDir   string // --git-dir (explicit, so no discovery ever runs)
	workTree string // --work-tree
	dir      string // working directory (defaults to gitDir)
	args     []string
	env      []string // extra environment
	stdin    io.Reader
	// stdout, when set, receives stdout instead of the returned buffer.
	stdout io.Writer
	// allowFile permits the file transport (clone and fetch between local
	// repositories); every other transport stays refused.
	allowFile bool
	// extraConfig is appended after gitHardening.
	extraConfig []string
	// safeDirs are repositories owned by another user that git may still
	// open (Sluice as root reading a person's repository, or a person's
	// fetch reading a tree handed to the container user). They go into a
	// throw-away global config file, because git does not pass -c options
	// to the upload-pack it starts for a local fetch.
	safeDirs []string
	// limit caps stdout (0: 64 MiB); past it the call fails, unless
	// truncated is set: then the first limit bytes are returned and
	// *truncated reports that there was more.
	limit     int64
	truncated *bool
	timeout   time.Duration
}

// env is built from nothing: no GIT_* variable, proxy, askpass or agent
// socket of the host process reaches git.
func (g *gitRunner) env(extra []string) []string {
	var path []string
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if filepath.IsAbs(dir) {
			path = append(path, dir)
		}
	}
	env := []string{
		"PATH=" + strings.Join(path, string(os.PathListSeparator)),
		"HOME=" + g.home,
		"LANG=C",
		"LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ADVICE=0",
		"GIT_AUTHOR_NAME=" + commitName,
		"GIT_AUTHOR_EMAIL=" + commitEmail,
		"GIT_COMMITTER_NAME=" + commitName,
		"GIT_COMMITTER_EMAIL=" + commitEmail,
	}
	return append(env, extra...)
}

func (g *gitRunner) run(ctx context.Context, c gitCall) ([]byte, error) {
	args := make([]string, 0, 2*len(gitHardening)+len(c.args)+8)
	for _, kv := range gitHardening {
		args = append(args, "-c", kv)
	}
	if c.allowFile {
		args = append(args, "-c", "protocol.file.allow=always")
	}
	for _, kv := range c.extraConfig {
		args = append(args, "-c", kv)
	}
	env := c.env
	if len(c.safeDirs) > 0 {
		var cfg strings.Builder
		cfg.WriteString("[safe]\n")
		for _, d := range c.safeDirs {
			if strings.ContainsAny(d, "\x00\n\r") {
				return nil, invalidArg("a repository path contains a control character")
			}
			args = append(args, "-c", "safe.directory="+d)
			cfg.WriteString("\tdirectory = \"" + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(d) + "\"\n")
		}
		f, err := os.CreateTemp(g.home, "gitconfig-*")
		if err != nil {
			return nil, internal(err, "cannot prepare git's configuration")
		}
		defer os.Remove(f.Name())
		_, werr := f.WriteString(cfg.String())
		if cerr := f.Close(); werr != nil || cerr != nil {
			return nil, internal(errors.Join(werr, cerr), "cannot prepare git's configuration")
		}
		env = append(append([]string(nil), env...), "GIT_CONFIG_GLOBAL="+f.Name())
	}
	if c.gitDir != "" {
		args = append(args, "--git-dir="+c.gitDir)
	}
	if c.workTree != "" {
		args = append(args, "--work-tree="+c.workTree)
	}
	args = append(args, c.args...)
	timeout := c.timeout
	if timeout <= 0 {
		timeout = gitTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, g.path, args...)
	cmd.Env = g.env(env)
	cmd.Dir = c.dir
	if cmd.Dir == "" {
		cmd.Dir = c.gitDir
	}
	if cmd.Dir == "" {
		cmd.Dir = g.home
	}
	cmd.Stdin = c.stdin
	setProcessGroup(cmd)
	cmd.WaitDelay = 5 * time.Second
	limit := c.limit
	if limit <= 0 {
		limit = 64 << 20
	}
	stdout := &capBuffer{max: limit, truncate: c.truncated != nil}
	stderr := &capBuffer{max: gitStderrCap, truncate: true}
	cmd.Stdout = stdout
	if c.stdout != nil {
		cmd.Stdout = c.stdout
	}
	cmd.Stderr = stderr
	err := cmd.Run()
	name := gitCommandName(c.args)
	if ctx.Err() == context.DeadlineExceeded {
		return nil, &Error{Code: CodeTimeout, Msg: "git " + name + " did not finish in time and was stopped"}
	}
	if c.truncated != nil {
		*c.truncated = stdout.over
	} else if stdout.over {
		return nil, &Error{Code: CodeOutputLimit, Msg: "git " + name + " produced more output than allowed", Data: LimitData{Limit: "output", Max: limit}}
	}
	if err != nil {
		code := -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 1024 {
			msg = msg[:1024]
		}
		return stdout.Bytes(), &Error{
			Code: CodeGitFailed,
			Msg:  "git " + name + " failed",
			Data: GitFailure{Command: name, ExitCode: code, Stderr: msg},
			Err:  err,
		}
	}
	return stdout.Bytes(), nil
}

var errCapExceeded = errors.New("output cap exceeded")

// pipe runs from | to: two git processes connected by an OS pipe.
func (g *gitRunner) pipe(ctx context.Context, from, to gitCall) error {
	r, w, err := os.Pipe()
	if err != nil {
		return internal(err, "cannot create a pipe")
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

// gitExitCode is the exit code of a git_failed error, or -1.
func gitExitCode(err error) int {
	var e *Error
	if errors.As(err, &e) {
		if f, ok := e.Data.(GitFailure); ok {
			return f.ExitCode
		}
	}
	return -1
}

// capBuffer keeps at most max bytes. Past it, it either fails the write
// (so the process stops on EPIPE) or, with truncate, drops the rest. The
// buffer is a field, not embedded, so that io.Copy cannot bypass Write
// through bytes.Buffer's ReadFrom.
type capBuffer struct {
	buf      bytes.Buffer
	max      int64
	truncate bool
	over     bool
}

func (b *capBuffer) Write(p []byte) (int, error) {
	room := b.max - int64(b.buf.Len())
	if int64(len(p)) <= room {
		return b.buf.Write(p)
	}
	b.over = true
	if room > 0 {
		b.buf.Write(p[:room])
	}
	if b.truncate {
		return len(p), nil
	}
	return 0, errCapExceeded
}

func (b *capBuffer) Bytes() []byte  { return b.buf.Bytes() }
func (b *capBuffer) String() string { return b.buf.String() }
