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

// stdoutCap bounds stdout; nothing the executor parses comes near it.
const stdoutCap = 64 << 20

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

// call is one git invocation. args are trusted by the time they get here:
// every revision and path an agent named was validated by core/proposal
// and every SHA was resolved by git; paths still go after "--" and
// revisions after --end-of-options where git accepts it.
type call struct {
	dir string
	// global are options before the subcommand (--git-dir, --work-tree).
	global []string
	args   []string
	stdin  []byte
	env    []string
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
	gc := gitx.Call{Profile: p, Dir: c.dir, Global: c.global, Args: c.args, Env: c.env, OK: c.ok,
		Limit: stdoutCap, Timeout: g.timeout}
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
	// The executor's own error contract, from gitx's failure.
	var ee *gitx.ExitError
	switch {
	case errors.As(err, &ee):
		return res, gitFailed(c.args, res)
	case errors.Is(err, gitx.ErrTimeout):
		return res, &errcode.Error{Code: errcode.GitFailed, Msg: fmt.Sprintf("git %s did not finish within %s and was stopped", subcommand(c.args), g.timeout), Err: context.DeadlineExceeded}
	case ctx.Err() != nil:
		return res, &errcode.Error{Code: errcode.GitFailed, Msg: fmt.Sprintf("git %s did not finish within %s and was stopped", subcommand(c.args), g.timeout), Err: ctx.Err()}
	case errcode.IsCode(err, errcode.OutputLimit):
		return res, &errcode.Error{Code: errcode.GitFailed, Msg: fmt.Sprintf("git %s produced more than %d bytes of output", subcommand(c.args), stdoutCap), Err: err}
	}
	return res, fmt.Errorf("apply: git %s: %w", subcommand(c.args), err)
}

func subcommand(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return "?"
}

func gitFailed(args []string, res result) *errcode.Error {
	s := strings.TrimSpace(res.stderr)
	first := s
	if i := strings.IndexByte(first, '\n'); i >= 0 {
		first = first[:i]
	}
	first = strings.TrimPrefix(strings.TrimPrefix(first, "fatal: "), "error: ")
	return &errcode.Error{Code: errcode.GitFailed,
		Msg:  fmt.Sprintf("git %s failed (exit %d): %s", subcommand(args), res.exit, clip(first, 300)),
		Data: errcode.GitFailure{Command: subcommand(args), ExitCode: res.exit, Stderr: clip(s, 4096)}}
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
