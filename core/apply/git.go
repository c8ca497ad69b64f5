package apply

import (
	"context"
	"io"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/apply/internal/gitrun"
	"github.com/sluicehq/sluice/core/gitx"
)

// Internal identity: the restore points' bookkeeping commits are made by
// Sluice, never under the person's name.
var sluiceIdentity = []string{
	"GIT_AUTHOR_NAME=Sluice", "GIT_AUTHOR_EMAIL=sluice@localhost",
	"GIT_COMMITTER_NAME=Sluice", "GIT_COMMITTER_EMAIL=sluice@localhost",
}

// gitEnv starts the executor's git processes for one repository,
// through gitrun (shared with sealing): every one runs under a named
// profile (gitx.ProfileWrite unless the call names another).
type gitEnv struct {
	git     *gitrun.Git
	repo    *gitx.Repo
	timeout time.Duration
	// zero is the null object id of the repository's hash.
	zero string
	// step, when set, is the executor's (Executor.step): named points
	// tests stop at.
	step func(string)
}

func newGitEnv(repo *gitx.Repo, timeout time.Duration) *gitEnv {
	g := gitrun.New(repo, timeout)
	return &gitEnv{git: g, repo: repo, timeout: timeout, zero: g.Zero}
}

// call is one git invocation (gitrun.Call): args are the subcommand,
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
	res, err := g.git.Run(ctx, c.gitrun())
	return resultOf(res), err
}

// gitrun is c as gitrun takes it.
func (c call) gitrun() gitrun.Call {
	return gitrun.Call{Dir: c.dir, Global: c.global, Args: c.args, Revs: c.revs, Paths: c.paths, DashDash: c.dashdash,
		Stdin: c.stdin, Env: c.env, Profile: c.profile, OK: c.ok, Stdout: c.stdout}
}

func resultOf(res gitrun.Result) result {
	return result{out: res.Out, stderr: res.Stderr, exit: res.Exit}
}

// failed classifies an exit that a call accepted as an answer (ok) but
// its caller found to be a failure (see gitrun.Failed).
func failed(command string, p gitx.Profile, res result) error {
	return gitrun.Failed(command, p, gitrun.Result{Out: res.out, Stderr: res.stderr, Exit: res.exit})
}

func nulList(paths []string) []byte { return gitrun.NulList(paths) }

// stderrOf is the stderr of a git failure, or "".
func stderrOf(err error) string { return gitrun.StderrOf(err) }
