package gitx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
)

// This file is the only place in Sluice that starts git. Every process,
// whichever package asks for it, gets here with a Profile, and the same
// machinery: an absolute git, the profile's options, configuration and
// environment, its own process group killed as a whole on a timeout,
// cancellation or an exceeded output cap, bounded stdout and stderr, exit
// codes that are answers, revisions and paths placed after
// --end-of-options and "--" and refused when git could read them as
// options, and one shape of failure (ExitError, ErrTimeout, output_limit)
// that Classify turns into the *errcode.Error every caller returns.

const (
	// waitDelay bounds how long Wait waits, after git exited or was
	// killed, for pipes that a child it started still holds.
	waitDelay = 2 * time.Second
)

// Call is one git process.
type Call struct {
	Profile Profile
	// Dir is the working directory (Repo.Run: the repository root when
	// empty).
	Dir string
	// Global are options before the subcommand (--git-dir, --work-tree).
	Global []string
	// Args are the subcommand and its options, and operands that are
	// Sluice's own constants (a ref prefix, a config key). A revision or
	// a path does not go here: it goes in Revs or Paths, where the
	// command line builder places it and the runner checks it.
	Args []string
	// Revs are revisions and other operands that are not pathspecs (a ref
	// name, a refspec, a worktree's directory), placed after
	// --end-of-options in this order. Every profile refuses one that git
	// could read as an option (see CheckRev).
	Revs []Rev
	// Paths are pathspecs and other path operands, placed after "--".
	// Every profile refuses one that is empty, begins with "-" or holds a
	// NUL.
	Paths []Path
	// DashDash writes "--" even when Paths is empty, so that no revision
	// can be taken for a path.
	DashDash bool
	// Config are -c settings added after the profile's. A key the profile
	// sets, a protocol.* key or safe.directory is refused.
	Config []string
	// AllowFileTransport allows the file transport for this call (a clone
	// or fetch between local repositories), where the profile permits it.
	AllowFileTransport bool
	// SafeDirs are repositories owned by another user that git may still
	// open (Sluice as root reading a person's repository), where the
	// profile permits it. They are passed with -c and, because git passes
	// no -c to the upload-pack a local fetch starts, in a throw-away
	// global configuration file as well.
	SafeDirs []string
	// Env are variables added to the profile's: only index, object
	// directory, identity and ceiling variables, and what the profile
	// needs from the call (ProfileHostileTree: HOME).
	Env   []string
	Stdin io.Reader
	// Stdout, when set, receives stdout as it comes, uncapped (a pipe to
	// another git); Output.Stdout is then empty.
	Stdout io.Writer
	// OK lists exit codes that are answers, not failures.
	OK []int
	// Limit caps stdout; zero means the profile's cap (see profileSpec.caps).
	// Past it the call fails with output_limit, unless Truncate is set:
	// then the first Limit bytes are kept and the rest is counted.
	Limit    int64
	Truncate bool
	// Timeout bounds the process; zero means the runner's Timeout.
	Timeout time.Duration
	// OnChunk sees every chunk of stdout, kept or not.
	OnChunk func([]byte)
	// OnStarted, when set, is called once the process has started (it is
	// not called when none starts), so that a caller can do its own work
	// while git runs instead of competing with git's start.
	OnStarted func()
}

// Rev is a revision, or another operand that is not a pathspec, in a
// Call: the command line builder places it after --end-of-options.
type Rev string

// Path is a pathspec or another path operand in a Call: the command line
// builder places it after "--".
type Path string

// Revs converts revisions held as strings.
func Revs(vs ...string) []Rev {
	out := make([]Rev, len(vs))
	for i, v := range vs {
		out[i] = Rev(v)
	}
	return out
}

// Paths converts paths held as strings.
func Paths(vs ...string) []Path {
	out := make([]Path, len(vs))
	for i, v := range vs {
		out[i] = Path(v)
	}
	return out
}

// checkOperands refuses a revision or path that git could read as an
// option. It runs for every call under every profile before a process is
// started, whatever the caller checked already.
func checkOperands(c *Call) error {
	for _, r := range c.Revs {
		if err := CheckRev("revision", string(r)); err != nil {
			return err
		}
	}
	for _, p := range c.Paths {
		if err := checkPathspec("path", string(p)); err != nil {
			return err
		}
	}
	return nil
}

// ExitError is a git process that exited with a code its call did not
// accept as an answer. Classify turns it into the *errcode.Error callers
// return.
type ExitError struct {
	// Command is the subcommand.
	Command  string
	ExitCode int
	// Stderr is what git wrote to stderr, up to the profile's cap.
	Stderr string
	// Profile is the profile the process ran under; it bounds how much of
	// Stderr a classified error carries.
	Profile Profile
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("git %s failed (exit %d)", e.Command, e.ExitCode)
}

// Run starts one git process under c.Profile, outside any repository's
// hardening (Repo.Run adds that). When git exits with a code that is not
// an answer, the error is an *ExitError and the Output is returned too.
func (r *Runner) Run(ctx context.Context, c Call) (*Output, error) {
	return r.start(ctx, c, nil)
}

// Run starts one git process under c.Profile for this repository: in its
// root unless c.Dir says otherwise, with what the profile takes from an
// opened repository (the ceiling that keeps discovery inside the allowed
// root, the emptied filter drivers).
func (repo *Repo) Run(ctx context.Context, c Call) (*Output, error) {
	if c.Dir == "" {
		c.Dir = repo.Root
	}
	return repo.r.start(ctx, c, repo)
}

func subcommandOf(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return "?"
}

// commandLine is the argument list of c under spec.
func commandLine(spec profileSpec, c *Call) []string {
	n := len(spec.options) + 2*(len(spec.config)+len(c.Config)+len(c.SafeDirs)+1) + len(c.Global) + len(spec.diffOptions) + len(c.Args) + len(c.Revs) + len(c.Paths) + 2
	a := make([]string, 0, n)
	a = append(a, spec.options...)
	for _, kv := range spec.config {
		a = append(a, "-c", kv)
	}
	for _, kv := range c.Config {
		a = append(a, "-c", kv)
	}
	if c.AllowFileTransport {
		a = append(a, "-c", "protocol.file.allow=always")
	}
	for _, d := range c.SafeDirs {
		a = append(a, "-c", "safe.directory="+d)
	}
	a = append(a, c.Global...)
	if len(c.Args) > 0 {
		a = append(a, c.Args[0])
		if diffFamily[c.Args[0]] {
			a = append(a, spec.diffOptions...)
		}
		a = append(a, c.Args[1:]...)
	}
	if len(c.Revs) > 0 {
		a = append(a, "--end-of-options")
		for _, r := range c.Revs {
			a = append(a, string(r))
		}
	}
	if len(c.Paths) > 0 || c.DashDash {
		a = append(a, "--")
		for _, p := range c.Paths {
			a = append(a, string(p))
		}
	}
	return a
}

// diffFamily are the subcommands that get the profile's diffOptions.
var diffFamily = map[string]bool{"diff": true, "log": true, "show": true}

// profileEnv is the environment every process of the profile starts
// with, taken from the process environment once, when the runner is made.
func profileEnv(spec profileSpec) []string {
	var env []string
	for _, k := range spec.keep {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	var path []string
	for _, dir := range filepath.SplitList(searchPath()) {
		// A relative entry could find a program inside a repository.
		if filepath.IsAbs(dir) {
			path = append(path, dir)
		}
	}
	env = append(env, "PATH="+strings.Join(path, string(os.PathListSeparator)))
	return append(env, spec.fixed...)
}

// environment is the full environment of c: the profile's, the
// repository's additions, the call's.
func (r *Runner) environment(spec profileSpec, c *Call, repo *Repo) []string {
	env := slices.Clone(r.envs[c.Profile])
	if repo != nil {
		if spec.ceiling {
			env = append(env, repo.ceilingEnv)
		}
		if spec.emptyFilters {
			env = append(env, repo.filterEnv...)
		}
	}
	return append(env, c.Env...)
}

// safeDirsFile writes the global configuration file that carries a call's
// safe directories into the directory the call gave as HOME, and returns
// its path.
func safeDirsFile(c *Call) (string, error) {
	var cfg strings.Builder
	cfg.WriteString("[safe]\n")
	for _, d := range c.SafeDirs {
		if d == "" || strings.ContainsAny(d, "\x00\n\r") {
			return "", errcode.New(errcode.InvalidArgument, "a repository path is empty or contains a control character")
		}
		cfg.WriteString("\tdirectory = \"" + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(d) + "\"\n")
	}
	home := ""
	for _, kv := range c.Env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	if home == "" {
		home = os.TempDir()
	}
	f, err := os.CreateTemp(home, "gitconfig-*")
	if err != nil {
		return "", fmt.Errorf("gitx: safe directories: %w", err)
	}
	_, werr := f.WriteString(cfg.String())
	if cerr := f.Close(); werr != nil || cerr != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("gitx: safe directories: %w", errors.Join(werr, cerr))
	}
	return f.Name(), nil
}

// sink takes a process's stdout: it keeps up to limit bytes, counts all
// of it, and stops the process group past the limit (or, truncating,
// past countCeiling).
type sink struct {
	limit    int64
	truncate bool
	onChunk  func([]byte)
	kill     func()
	kept     bytes.Buffer
	out      *Output
	last     byte
	over     bool
}

var errStdoutCap = errors.New("gitx: stdout cap reached")

func (s *sink) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if s.onChunk != nil {
		s.onChunk(p)
	}
	s.out.TotalBytes += int64(len(p))
	s.out.TotalLines += int64(bytes.Count(p, []byte{'\n'}))
	s.last = p[len(p)-1]
	if room := s.limit - int64(s.kept.Len()); room > 0 {
		if int64(len(p)) > room {
			s.kept.Write(p[:room])
		} else {
			s.kept.Write(p)
		}
	}
	if s.out.TotalBytes > s.limit {
		if !s.truncate {
			s.over = true
			s.kill()
			return 0, errStdoutCap
		}
		if s.out.TotalBytes > countCeiling {
			s.out.Counted = false
			s.kill()
			return 0, errStdoutCap
		}
	}
	return len(p), nil
}

// start runs c: the one place a git process is started.
func (r *Runner) start(ctx context.Context, c Call, repo *Repo) (*Output, error) {
	spec, ok := profiles[c.Profile]
	if !ok {
		return nil, fmt.Errorf("gitx: unknown profile %d", int(c.Profile))
	}
	if err := spec.checkCall(&c); err != nil {
		return nil, err
	}
	if err := checkOperands(&c); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = r.timeout
	}
	limit := c.Limit
	if limit <= 0 {
		limit = spec.caps.stdout
	}
	if limit <= 0 {
		limit = r.maxOutput
	}
	stderrMax := spec.caps.stderr
	env := r.environment(spec, &c, repo)
	if len(c.SafeDirs) > 0 {
		cfg, err := safeDirsFile(&c)
		if err != nil {
			return nil, err
		}
		defer os.Remove(cfg)
		// Replaces the profile's GIT_CONFIG_GLOBAL=/dev/null with a file
		// holding nothing but the safe directories (exec keeps the last
		// of duplicate variables).
		env = append(env, "GIT_CONFIG_GLOBAL="+cfg)
	}

	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ex := exec.Command(r.path, commandLine(spec, &c)...)
	ex.Dir = c.Dir
	ex.Env = env
	ex.Stdin = c.Stdin
	stderr := &Capped{Max: stderrMax}
	ex.Stderr = stderr
	ex.WaitDelay = waitDelay
	SetProcessGroup(ex)

	var killed atomic.Bool
	kill := func() {
		if killed.CompareAndSwap(false, true) {
			KillProcessGroup(ex.Process)
		}
	}
	out := &Output{Counted: true}
	sk := &sink{limit: limit, truncate: c.Truncate, onChunk: c.OnChunk, kill: kill, out: out}
	if c.Stdout != nil {
		ex.Stdout = c.Stdout
	} else {
		ex.Stdout = sk
	}
	if err := startOwn(ex); err != nil {
		return nil, fmt.Errorf("gitx: start git: %w", err)
	}
	r.started.Add(1)
	if c.OnStarted != nil {
		c.OnStarted()
	}
	watchDone := make(chan struct{})
	go func() {
		select {
		case <-tctx.Done():
			kill()
		case <-watchDone:
		}
	}()
	waitErr := ex.Wait()
	dropOwn(ex.Process.Pid)
	close(watchDone)
	if out.TotalBytes > 0 && sk.last != '\n' {
		out.TotalLines++
	}
	out.Stdout = sk.kept.Bytes()
	out.Stderr = stderr.String()
	out.Truncated = out.TotalBytes > limit

	if sk.over {
		return nil, &errcode.Error{Code: errcode.OutputLimit,
			Msg:  fmt.Sprintf("git output exceeded %d bytes; narrow the request (paths, limit, a smaller range)", limit),
			Data: OutputLimit{LimitBytes: limit}}
	}
	if killed.Load() && tctx.Err() != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, ErrTimeout
	}
	if waitErr != nil {
		var ee *exec.ExitError
		if !errors.As(waitErr, &ee) {
			if killed.Load() && !out.Counted {
				// A truncating call stopped at the counting ceiling.
				return out, nil
			}
			return nil, fmt.Errorf("gitx: wait for git %s: %w", subcommandOf(c.Args), waitErr)
		}
		if killed.Load() && !out.Counted {
			return out, nil
		}
		out.ExitCode = ee.ExitCode()
	}
	if out.ExitCode == 0 || slices.Contains(c.OK, out.ExitCode) {
		return out, nil
	}
	return out, &ExitError{Command: subcommandOf(c.Args), ExitCode: out.ExitCode, Stderr: out.Stderr, Profile: c.Profile}
}
