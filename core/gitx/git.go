package gitx

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
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
)

// MinVersion is the oldest git the runner accepts: --path-format,
// GIT_CONFIG_COUNT and --end-of-options on rev-parse all exist from here.
var MinVersion = Version{2, 31, 0}

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
	path    string
	version Version
	// envs is each profile's environment, taken from the process
	// environment when the runner was made; env is Read's.
	envs      map[Profile][]string
	env       []string
	timeout   time.Duration
	maxOutput int64
	started   atomic.Int64
	cache     openCache
	refNames  refNamesCache
	objects   objectsCache
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
	r := &Runner{path: p, envs: map[Profile][]string{}, timeout: o.Timeout, maxOutput: o.MaxOutput}
	for _, pr := range Profiles {
		r.envs[pr] = profileEnv(profiles[pr])
	}
	r.env = r.envs[ProfileRead]
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
		return nil, errcode.New(errcode.Unsupported, "git %s is too old; Sluice needs git %s or newer", v, MinVersion)
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
	// onStarted is Call.OnStarted.
	onStarted func()
}

// Output is what a git process wrote to stdout.
type Output struct {
	Stdout []byte
	// Stderr is what git wrote to stderr, up to the call's cap.
	Stderr   string
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

// call is c as a Read process.
func (c *cmd) call() Call {
	args := make([]string, 0, len(c.sub)+len(c.opts))
	args = append(args, c.sub...)
	args = append(args, c.opts...)
	return Call{Profile: ProfileRead, Dir: c.dir, Args: args, Revs: Revs(c.revs...), Paths: Paths(c.paths...), DashDash: c.dashdash,
		Env: c.env, Stdin: c.stdin, OK: c.okExit, Limit: c.limit, Truncate: c.truncate, Timeout: c.timeout, OnChunk: c.onChunk, OnStarted: c.onStarted}
}

// argv is the command line of a read.
func (r *Runner) argv(c *cmd) []string {
	call := c.call()
	return commandLine(profiles[ProfileRead], &call)
}

// run starts a read: its operands are checked before anything starts, its
// limits may only lower the runner's, and a failure is classified into
// the codes a model can act on.
func (r *Runner) run(ctx context.Context, c *cmd) (*Output, error) {
	return r.read(ctx, c, nil)
}

func (r *Runner) read(ctx context.Context, c *cmd, repo *Repo) (*Output, error) {
	call := c.call()
	if call.Timeout <= 0 || call.Timeout > r.timeout {
		call.Timeout = r.timeout
	}
	if call.Limit <= 0 || call.Limit > r.maxOutput {
		call.Limit = r.maxOutput
	}
	out, err := r.start(ctx, call, repo)
	if err != nil {
		return nil, Classify(err)
	}
	return out, nil
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
