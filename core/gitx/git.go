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
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Limits of a single git process. A tool may lower them per call; none may
// raise them past the hard caps below.
const (
	// DefaultTimeout bounds one git process.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxOutput is the stdout a parsed command may produce before
	// the call fails with output_limit.
	DefaultMaxOutput int64 = 32 << 20
	// countCeiling bounds how far a truncating call keeps counting bytes
	// and lines after its cap, so that totals stay honest without letting
	// a runaway diff stream forever.
	countCeiling int64 = 1 << 30
	// stderrCap bounds what is kept of git's stderr.
	stderrCap = 16 << 10
	// reportedStderr bounds the stderr put into an error for the model.
	reportedStderr = 1024
)

// MinVersion is the oldest git the runner accepts: --path-format,
// GIT_CONFIG_COUNT and --end-of-options on rev-parse all exist from here.
var MinVersion = Version{2, 31, 0}

// hardeningConfig is passed as -c to every git process (and, through
// GIT_CONFIG_PARAMETERS, to any git child it starts). Command-line config
// is read after every config file, includes and all, so a repository
// cannot override it. Each line neutralises something a repository (or a
// user config file that a repository's attributes select from) could make
// git execute, or something that would make output unparseable.
var hardeningConfig = []string{
	// fsmonitor is a program git runs on status and diff.
	"core.fsmonitor=false",
	// No hook exists under /dev/null. Reads run no hooks today; this keeps
	// it so (post-index-change, reference-transaction, …).
	"core.hooksPath=/dev/null",
	// --no-pager already stops the pager; this covers git children.
	"core.pager=cat",
	// Prompts and credentials: an empty helper list, no askpass program.
	"credential.helper=",
	"core.askPass=",
	// No transport at all: reads never talk to a remote, and a lazy fetch
	// in a partial clone would otherwise run core.sshCommand or ext::.
	"core.sshCommand=",
	"protocol.allow=never",
	"protocol.ext.allow=never",
	"protocol.fd.allow=never",
	"protocol.file.allow=never",
	"protocol.ssh.allow=never",
	"protocol.git.allow=never",
	"protocol.http.allow=never",
	"protocol.https.allow=never",
	// log.showSignature makes log and show run gpg.program.
	"log.showSignature=false",
	// Submodule children: never recurse, never summarise.
	"submodule.recurse=false",
	"status.submoduleSummary=false",
	// Nothing may start housekeeping in the background.
	"gc.auto=0",
	"maintenance.auto=false",
	// Output stability for parsing.
	"color.ui=false",
	"core.quotePath=false",
	"diff.noprefix=false",
	"diff.mnemonicPrefix=false",
	"diff.relative=false",
	"diff.colorMoved=false",
	"log.decorate=false",
	"log.showRoot=true",
	"i18n.logOutputEncoding=UTF-8",
}

// diffFamily are the subcommands that can run diff.external, a
// diff.<driver>.command or a textconv program. They always get
// --no-ext-diff --no-textconv. (diff-tree and friends never run external
// diffs; textconv only with --textconv, which is never passed.)
var diffFamily = map[string]bool{"diff": true, "log": true, "show": true}

// keptEnv are the only variables passed from the sidecar's environment to
// git. Everything else (GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE, GIT_CONFIG_*,
// GIT_EXEC_PATH, GIT_EXTERNAL_DIFF, GIT_ASKPASS, SSH_ASKPASS, GIT_SSH*,
// PAGER, LD_PRELOAD, …) is dropped by construction.
var keptEnv = []string{"HOME", "USER", "LOGNAME", "TMPDIR", "TZ", "XDG_CONFIG_HOME", "SYSTEMROOT", "USERPROFILE"}

// fixedEnv is set on every git process.
var fixedEnv = []string{
	"GIT_OPTIONAL_LOCKS=0",
	"GIT_TERMINAL_PROMPT=0",
	"GIT_CONFIG_NOSYSTEM=1",
	"GIT_ATTR_NOSYSTEM=1",
	"GIT_LITERAL_PATHSPECS=1",
	"GIT_ADVICE=0",
	"LC_ALL=C",
	"LANG=C",
}

// Version is a git version.
type Version struct{ Major, Minor, Patch int }

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// AtLeast reports whether v >= o.
func (v Version) AtLeast(o Version) bool {
	if v.Major != o.Major {
		return v.Major > o.Major
	}
	if v.Minor != o.Minor {
		return v.Minor > o.Minor
	}
	return v.Patch >= o.Patch
}

var versionRe = regexp.MustCompile(`git version (\d+)\.(\d+)(?:\.(\d+))?`)

func parseVersion(s string) (Version, bool) {
	m := versionRe.FindStringSubmatch(s)
	if m == nil {
		return Version{}, false
	}
	var v Version
	v.Major, _ = strconv.Atoi(m[1])
	v.Minor, _ = strconv.Atoi(m[2])
	if m[3] != "" {
		v.Patch, _ = strconv.Atoi(m[3])
	}
	return v, true
}

// Runner starts hardened git processes. It is safe for concurrent use.
type Runner struct {
	path      string
	version   Version
	env       []string
	timeout   time.Duration
	maxOutput int64
	started   atomic.Int64
	cache     openCache
}

// RunnerOptions configure NewRunner.
type RunnerOptions struct {
	// GitPath is an absolute path to git. Empty means: search the absolute
	// entries of PATH (a relative entry could name a git inside a
	// repository, so those are skipped).
	GitPath string
	// Timeout per process; zero means DefaultTimeout.
	Timeout time.Duration
	// MaxOutput per process; zero means DefaultMaxOutput.
	MaxOutput int64
}

var (
	defaultOnce   sync.Once
	defaultRunner *Runner
	defaultErr    error
)

// Default returns the process-wide runner, resolving git once.
func Default() (*Runner, error) {
	defaultOnce.Do(func() { defaultRunner, defaultErr = NewRunner(RunnerOptions{}) })
	return defaultRunner, defaultErr
}

// NewRunner resolves git to an absolute, symlink-free path, checks its
// version and fixes the environment every process will get.
func NewRunner(o RunnerOptions) (*Runner, error) {
	p := o.GitPath
	if p == "" {
		var err error
		if p, err = findGit(searchPath()); err != nil {
			return nil, err
		}
	}
	if !filepath.IsAbs(p) {
		return nil, fmt.Errorf("gitx: git path %q is not absolute", p)
	}
	p, err := filepath.EvalSymlinks(p)
	if err != nil {
		return nil, fmt.Errorf("gitx: resolve git: %w", err)
	}
	r := &Runner{path: p, env: buildEnv(), timeout: o.Timeout, maxOutput: o.MaxOutput}
	if r.timeout <= 0 {
		r.timeout = DefaultTimeout
	}
	if r.maxOutput <= 0 {
		r.maxOutput = DefaultMaxOutput
	}
	out, err := r.run(context.Background(), &cmd{dir: os.TempDir(), sub: []string{"version"}, limit: 4096})
	if err != nil {
		return nil, fmt.Errorf("gitx: %s version: %w", p, err)
	}
	v, ok := parseVersion(string(out.Stdout))
	if !ok {
		return nil, fmt.Errorf("gitx: cannot parse %q", strings.TrimSpace(string(out.Stdout)))
	}
	if !v.AtLeast(MinVersion) {
		return nil, unsupported("git %s is too old; Sluice needs git %s or newer", v, MinVersion)
	}
	r.version = v
	return r, nil
}

// Path is the absolute git binary every process runs.
func (r *Runner) Path() string { return r.path }

// Version is the git version found at start.
func (r *Runner) Version() Version { return r.version }

// Started counts git processes started by this runner. Tests use it to
// prove that a refused argument never reached git.
func (r *Runner) Started() int64 { return r.started.Load() }

// Timeout is the per-process time limit.
func (r *Runner) Timeout() time.Duration { return r.timeout }

// MaxOutput is the per-process output cap.
func (r *Runner) MaxOutput() int64 { return r.maxOutput }

// searchPath is PATH, or defaultPath when PATH is unset or empty.
func searchPath() string {
	if p := os.Getenv("PATH"); p != "" {
		return p
	}
	return defaultPath
}

func findGit(pathEnv string) (string, error) {
	for _, dir := range filepath.SplitList(pathEnv) {
		if !filepath.IsAbs(dir) {
			continue
		}
		cand := filepath.Join(dir, gitExe)
		st, err := os.Stat(cand)
		if err != nil || st.IsDir() || !isExecutable(st) {
			continue
		}
		return cand, nil
	}
	return "", ErrGitNotFound
}

func buildEnv() []string {
	var env []string
	for _, k := range keptEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	var path []string
	for _, dir := range filepath.SplitList(searchPath()) {
		if filepath.IsAbs(dir) {
			path = append(path, dir)
		}
	}
	env = append(env, "PATH="+strings.Join(path, string(os.PathListSeparator)))
	return append(env, fixedEnv...)
}

// cmd is one git invocation. Options come from this package's code;
// revisions and paths may come from an agent and are checked and placed
// after --end-of-options and -- respectively.
type cmd struct {
	dir   string
	sub   []string // subcommand words, e.g. {"worktree", "list"}
	opts  []string // trusted options
	revs  []string // untrusted revisions
	paths []string // untrusted pathspecs (relative to the repository root)
	// dashdash forces a "--" even without paths, so that a revision can
	// never be taken for a path.
	dashdash bool
	env      []string
	stdin    io.Reader
	okExit   []int
	limit    int64
	// truncate keeps the first limit bytes and counts the rest instead of
	// failing with output_limit.
	truncate bool
	timeout  time.Duration
	// onChunk sees every chunk of stdout, kept or not (for counting what a
	// truncated result left out).
	onChunk func([]byte)
}

// Output is what a git process wrote to stdout.
type Output struct {
	Stdout   []byte
	ExitCode int
	// Truncated is set when stdout went past the limit of a truncating
	// call; Stdout then holds the first limit bytes.
	Truncated bool
	// TotalBytes and TotalLines count all of stdout, including what was
	// not kept. Counted is false when counting stopped at countCeiling.
	TotalBytes int64
	TotalLines int64
	Counted    bool
}

// checkOperands refuses anything that git could read as an option. It runs
// before a process is started, whatever the caller checked already.
func checkOperands(c *cmd) error {
	for _, r := range c.revs {
		if err := CheckRev("revision", r); err != nil {
			return err
		}
	}
	for _, p := range c.paths {
		if err := checkPathspec("path", p); err != nil {
			return err
		}
	}
	return nil
}

func (r *Runner) argv(c *cmd) []string {
	a := make([]string, 0, 8+2*len(hardeningConfig)+len(c.opts)+len(c.revs)+len(c.paths))
	a = append(a, "--no-pager", "--no-optional-locks", "--literal-pathspecs")
	for _, kv := range hardeningConfig {
		a = append(a, "-c", kv)
	}
	a = append(a, c.sub...)
	if len(c.sub) > 0 && diffFamily[c.sub[0]] {
		a = append(a, "--no-ext-diff", "--no-textconv")
	}
	a = append(a, c.opts...)
	if len(c.revs) > 0 {
		a = append(a, "--end-of-options")
		a = append(a, c.revs...)
	}
	if len(c.paths) > 0 || c.dashdash {
		a = append(a, "--")
		a = append(a, c.paths...)
	}
	return a
}

// run starts git, reads its output within the limits and classifies its
// failure. The process runs in its own process group, which is killed as
// a whole on timeout, cancellation or an exceeded output cap.
func (r *Runner) run(ctx context.Context, c *cmd) (*Output, error) {
	if err := checkOperands(c); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	timeout := r.timeout
	if c.timeout > 0 && c.timeout < timeout {
		timeout = c.timeout
	}
	limit := r.maxOutput
	if c.limit > 0 && c.limit < limit {
		limit = c.limit
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	args := r.argv(c)
	ex := exec.Command(r.path, args...)
	ex.Dir = c.dir
	ex.Env = append(append([]string(nil), r.env...), c.env...)
	ex.Stdin = c.stdin
	stderr := &Capped{Max: stderrCap}
	ex.Stderr = stderr
	ex.WaitDelay = 2 * time.Second
	SetProcessGroup(ex)
	stdout, err := ex.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("gitx: stdout pipe: %w", err)
	}
	if err := ex.Start(); err != nil {
		return nil, fmt.Errorf("gitx: start git: %w", err)
	}
	r.started.Add(1)

	var killed atomic.Bool
	kill := func() {
		if killed.CompareAndSwap(false, true) {
			KillProcessGroup(ex.Process)
		}
	}
	watchDone := make(chan struct{})
	go func() {
		select {
		case <-tctx.Done():
			kill()
		case <-watchDone:
		}
	}()

	out := &Output{Counted: true}
	overLimit := false
	buf := make([]byte, 64<<10)
	var kept bytes.Buffer
	var last byte
	for {
		n, rerr := stdout.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if c.onChunk != nil {
				c.onChunk(chunk)
			}
			out.TotalBytes += int64(n)
			out.TotalLines += int64(bytes.Count(chunk, []byte{'\n'}))
			last = chunk[n-1]
			if room := limit - int64(kept.Len()); room > 0 {
				if int64(len(chunk)) > room {
					kept.Write(chunk[:room])
				} else {
					kept.Write(chunk)
				}
			}
			if out.TotalBytes > limit {
				if !c.truncate {
					overLimit = true
					kill()
				} else if out.TotalBytes > countCeiling {
					out.Counted = false
					kill()
				}
			}
		}
		if rerr != nil {
			break
		}
	}
	if out.TotalBytes > 0 && last != '\n' {
		out.TotalLines++
	}
	waitErr := ex.Wait()
	close(watchDone)
	out.Stdout = kept.Bytes()
	out.Truncated = out.TotalBytes > limit

	if overLimit {
		return nil, &Error{Code: CodeOutputLimit,
			Msg:  fmt.Sprintf("git output exceeded %d bytes; narrow the request (paths, limit, a smaller range)", limit),
			Data: OutputLimit{LimitBytes: limit}}
	}
	if killed.Load() && tctx.Err() != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, ErrTimeout
	}
	code := 0
	if waitErr != nil {
		var ee *exec.ExitError
		if !errors.As(waitErr, &ee) {
			if killed.Load() && !out.Counted {
				// We stopped a truncating call at the counting ceiling.
				return out, nil
			}
			return nil, fmt.Errorf("gitx: wait for git: %w", waitErr)
		}
		code = ee.ExitCode()
		if killed.Load() && !out.Counted {
			return out, nil
		}
	}
	out.ExitCode = code
	if code == 0 {
		return out, nil
	}
	for _, ok := range c.okExit {
		if code == ok {
			return out, nil
		}
	}
	return nil, classify(c, code, stderr.String())
}

// classify turns a git failure into a coded error.
func classify(c *cmd, code int, stderr string) error {
	s := strings.TrimSpace(stderr)
	low := strings.ToLower(s)
	switch {
	case strings.Contains(low, "not a git repository"):
		return ErrNotARepository
	case strings.Contains(low, "unknown revision"),
		strings.Contains(low, "bad revision"),
		strings.Contains(low, "ambiguous argument"),
		strings.Contains(low, "needed a single revision"),
		strings.Contains(low, "invalid object name"),
		strings.Contains(low, "not a valid object name"),
		strings.Contains(low, "bad object"),
		strings.Contains(low, "not a valid commit name"),
		strings.Contains(low, "invalid reference"),
		strings.Contains(low, "not a commit"),
		strings.Contains(low, "does not have any commits yet"),
		strings.Contains(low, "no such ref"):
		return &Error{Code: CodeInvalidArgument, Msg: "git could not resolve a revision: " + firstLine(s, reportedStderr)}
	case strings.Contains(low, "detected dubious ownership"):
		return &Error{Code: CodeGitFailed, Msg: "git refuses this repository because another user owns it (safe.directory); the person must decide to trust it",
			Data: GitFailure{Command: strings.Join(c.sub, " "), ExitCode: code}}
	}
	if len(s) > reportedStderr {
		s = s[:reportedStderr] + "…"
	}
	return &Error{Code: CodeGitFailed, Msg: fmt.Sprintf("git %s failed (exit %d)", strings.Join(c.sub, " "), code),
		Data: GitFailure{Command: strings.Join(c.sub, " "), ExitCode: code, Stderr: s}}
}

func firstLine(s string, max int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimPrefix(s, "fatal: ")
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// Capped is a writer that keeps the first Max bytes written to it (a
// process's stderr, say) and takes the rest without keeping it.
type Capped struct {
	mu  sync.Mutex
	buf bytes.Buffer
	Max int
}

func (w *Capped) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if room := w.Max - w.buf.Len(); room > 0 {
		if len(p) > room {
			w.buf.Write(p[:room])
		} else {
			w.buf.Write(p)
		}
	}
	return len(p), nil
}

func (w *Capped) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
