package apply

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
)

// Internal identity: the restore points' bookkeeping commits are made by
// Sluice, never under the person's name.
var sluiceIdentity = []string{
	"GIT_AUTHOR_NAME=Sluice", "GIT_AUTHOR_EMAIL=sluice@localhost",
	"GIT_COMMITTER_NAME=Sluice", "GIT_COMMITTER_EMAIL=sluice@localhost",
}

// gitEnv starts the executor's git processes for one repository, through
// core/gitx: every one runs under a named profile (gitx.ProfileWrite
// unless the call names another).
type gitEnv struct {
	repo    *gitx.Repo
	timeout time.Duration
	// zero is the null object id of the repository's hash.
	zero string
}

func newGitEnv(repo *gitx.Repo, timeout time.Duration) *gitEnv {
	zero := strings.Repeat("0", 40)
	if repo.ObjectFormat == "sha256" {
		zero = strings.Repeat("0", 64)
	}
	return &gitEnv{repo: repo, timeout: timeout, zero: zero}
}

// call is one git invocation, in gitx's shape: args are the subcommand,
// its options and Sluice's own constants; revisions go in revs and paths
// in paths, and gitx places them after --end-of-options and "--" and
// refuses one that git could read as an option, whatever core/proposal
// validated before.
type call struct {
	dir string
	// global are options before the subcommand (--git-dir, --work-tree).
	global []string
	args   []string
	// revs are revisions and other operands that are not paths (ref
	// names, refspecs, a worktree's directory): gitx.Call.Revs.
	revs []string
	// paths are pathspecs: gitx.Call.Paths. dashdash writes "--" without
	// any, so that no revision is taken for a path.
	paths    []string
	dashdash bool
	stdin    []byte
	env      []string
	// profile is gitx.ProfileWrite when zero. gitx.ProfileSigned and
	// gitx.ProfilePerson are named at the call, with why.
	profile gitx.Profile
	// ok lists exit codes that are answers, not failures.
	ok []int
	// stdout, when set, receives the output as it comes, uncapped;
	// result.out is then empty.
	stdout io.Writer
}

type result struct {
	out    []byte
	stderr string
	exit   int
}

func (r result) text() string { return strings.TrimSpace(string(r.out)) }

func (g *gitEnv) run(ctx context.Context, c call) (result, error) {
	if ctx.Err() != nil {
		return result{}, ctx.Err()
	}
	p := c.profile
	if p == 0 {
		p = gitx.ProfileWrite
	}
	gc := gitx.Call{Profile: p, Dir: c.dir, Global: c.global, Args: c.args, Revs: gitx.Revs(c.revs...), Paths: gitx.Paths(c.paths...),
		DashDash: c.dashdash, Env: c.env, OK: c.ok, Timeout: g.timeout}
	if c.stdin != nil {
		gc.Stdin = bytes.NewReader(c.stdin)
	}
	if c.stdout != nil {
		gc.Stdout = c.stdout
	}
	out, err := g.repo.Run(ctx, gc)
	var res result
	if out != nil {
		res = result{out: out.Stdout, stderr: out.Stderr, exit: out.ExitCode}
	}
	if err == nil {
		return res, nil
	}
	if err = gitx.Classify(err); isCoded(err) {
		return res, err
	}
	return res, fmt.Errorf("apply: git %s: %w", subcommand(c.args), err)
}

// failed classifies an exit that a call accepted as an answer (ok) but
// its caller found to be a failure, the same way gitx classifies every
// other failed run.
func failed(command string, p gitx.Profile, res result) error {
	return gitx.Classify(&gitx.ExitError{Command: command, ExitCode: res.exit, Stderr: res.stderr, Profile: p})
}

// isCoded reports whether err carries an errcode code.
func isCoded(err error) bool {
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

// stderrOf is the stderr of a git failure, or "".
func stderrOf(err error) string {
	var e *errcode.Error
	if errors.As(err, &e) {
		if f, ok := e.Data.(errcode.GitFailure); ok {
			return f.Stderr
		}
	}
	return ""
}
