// Package gitrun runs git in one repository for the executor
// (core/apply) and for sealing (core/apply/seal): the hardened git of
// core/gitx, every process under a named profile, revisions and paths
// placed by gitx, and a failure classified the way gitx classifies every
// other. Both packages compute the same states with it (sealing when a
// proposal arrives, the executor again before it writes), so they share
// it rather than import each other.
package gitrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
)

// Git starts the git processes of one repository.
type Git struct {
	Repo    *gitx.Repo
	Timeout time.Duration
	// Zero is the null object id of the repository's hash.
	Zero string
	// trees remembers the tree of commits already read (a commit's tree
	// never changes), so the seal does not ask git again for the tree of
	// the HEAD the pins were read with; ntrees bounds it.
	trees  sync.Map
	ntrees atomic.Int64
}

// maxTrees is how many commits' trees a Git remembers before it forgets
// them all and starts again.
const maxTrees = 4096

// RememberTree records that commit's tree is tree, for Trees.
func (g *Git) RememberTree(commit, tree string) {
	if !ObjectID.MatchString(commit) || !ObjectID.MatchString(tree) {
		return
	}
	if g.ntrees.Add(1) > maxTrees {
		g.trees.Clear()
		g.ntrees.Store(1)
	}
	g.trees.Store(commit, tree)
}

// New returns the git of repo, each process bounded by timeout.
func New(repo *gitx.Repo, timeout time.Duration) *Git {
	zero := strings.Repeat("0", 40)
	if repo.ObjectFormat == "sha256" {
		zero = strings.Repeat("0", 64)
	}
	return &Git{Repo: repo, Timeout: timeout, Zero: zero}
}

// Call is one git invocation, in gitx's shape: Args are the subcommand,
// its options and Sluice's own constants; revisions go in Revs and paths
// in Paths, and gitx places them after --end-of-options and "--" and
// refuses one that git could read as an option, whatever core/proposal
// validated before.
type Call struct {
	Dir string
	// Global are options before the subcommand (--git-dir, --work-tree).
	Global []string
	Args   []string
	// Revs are revisions and other operands that are not paths (ref
	// names, refspecs, a worktree's directory): gitx.Call.Revs.
	Revs []string
	// Paths are pathspecs: gitx.Call.Paths. DashDash writes "--" without
	// any, so that no revision is taken for a path.
	Paths    []string
	DashDash bool
	Stdin    []byte
	Env      []string
	// Profile is gitx.ProfileWrite when zero. gitx.ProfileSigned and
	// gitx.ProfilePerson are named at the call, with why.
	Profile gitx.Profile
	// OK lists exit codes that are answers, not failures.
	OK []int
	// Stdout, when set, receives the output as it comes, uncapped;
	// Result.Out is then empty.
	Stdout io.Writer
}

// Result is what a git process answered.
type Result struct {
	Out    []byte
	Stderr string
	Exit   int
}

// Text is the output without the whitespace around it.
func (r Result) Text() string { return strings.TrimSpace(string(r.Out)) }

// Run runs c.
func (g *Git) Run(ctx context.Context, c Call) (Result, error) {
	if ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	p := c.Profile
	if p == 0 {
		p = gitx.ProfileWrite
	}
	gc := gitx.Call{Profile: p, Dir: c.Dir, Global: c.Global, Args: c.Args, Revs: gitx.Revs(c.Revs...), Paths: gitx.Paths(c.Paths...),
		DashDash: c.DashDash, Env: c.Env, OK: c.OK, Timeout: g.Timeout}
	if c.Stdin != nil {
		gc.Stdin = bytes.NewReader(c.Stdin)
	}
	if c.Stdout != nil {
		gc.Stdout = c.Stdout
	}
	out, err := g.Repo.Run(ctx, gc)
	var res Result
	if out != nil {
		res = Result{Out: out.Stdout, Stderr: out.Stderr, Exit: out.ExitCode}
	}
	if err == nil {
		return res, nil
	}
	if err = gitx.Classify(err); IsCoded(err) {
		return res, err
	}
	return res, fmt.Errorf("apply: git %s: %w", subcommand(c.Args), err)
}

// Failed classifies an exit that a call accepted as an answer (OK) but
// its caller found to be a failure, the same way gitx classifies every
// other failed run.
func Failed(command string, p gitx.Profile, res Result) error {
	return gitx.Classify(&gitx.ExitError{Command: command, ExitCode: res.Exit, Stderr: res.Stderr, Profile: p})
}

// IsCoded reports whether err carries an errcode code.
func IsCoded(err error) bool {
	_, ok := errcode.As(err)
	return ok
}

func subcommand(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return "?"
}

// StderrOf is the stderr of a git failure, or "".
func StderrOf(err error) string {
	var e *errcode.Error
	if errors.As(err, &e) {
		if f, ok := e.Data.(errcode.GitFailure); ok {
			return f.Stderr
		}
	}
	return ""
}

// NulList is paths as git reads them from stdin with
// --pathspec-from-file=- --pathspec-file-nul (or -z): each ended by a NUL,
// so any path is literal.
func NulList(paths []string) []byte {
	var b bytes.Buffer
	for _, p := range paths {
		b.WriteString(p)
		b.WriteByte(0)
	}
	return b.Bytes()
}

// ObjectID matches a full object id (SHA-1 or SHA-256).
var ObjectID = regexp.MustCompile(`^(?:[0-9a-f]{40}|[0-9a-f]{64})$`)

// Trees returns the tree of each commit, in one process, or none when
// every commit's tree is remembered.
func (g *Git) Trees(ctx context.Context, dir string, commits ...string) (map[string]string, error) {
	out := map[string]string{}
	ask := make([]string, 0, len(commits))
	for _, c := range commits {
		if t, ok := g.trees.Load(c); ok {
			out[c] = t.(string)
		} else {
			ask = append(ask, c)
		}
	}
	if len(ask) == 0 {
		return out, nil
	}
	commits = ask
	trees := make([]string, 0, len(commits))
	for _, c := range commits {
		trees = append(trees, c+"^{tree}")
	}
	// --revs-only: rev-parse prints the revisions, not the
	// --end-of-options and "--" around them.
	res, err := g.Run(ctx, Call{Dir: dir, Args: []string{"rev-parse", "--revs-only"}, Revs: trees, DashDash: true})
	if err != nil {
		return nil, err
	}
	lines := strings.Split(res.Text(), "\n")
	if len(lines) != len(commits) {
		return nil, errcode.New(errcode.GitFailed, "git rev-parse gave an unexpected answer")
	}
	for i, c := range commits {
		if !ObjectID.MatchString(lines[i]) {
			return nil, errcode.New(errcode.GitFailed, "git rev-parse gave an unexpected answer")
		}
		out[c] = lines[i]
		g.RememberTree(c, lines[i])
	}
	return out, nil
}
