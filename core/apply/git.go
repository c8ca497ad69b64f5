package apply

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/gitx"
)

// mode is how much of the person's own configuration a git process may
// use. Everything runs hardened unless the code says otherwise at the call.
type mode int

const (
	// hardened is the read hardening of core/gitx plus settings for
	// writing: no hooks, no filters, no transport, no signing, no
	// background maintenance, nothing that prompts.
	hardened mode = iota
	// signing is hardened, except that the person's signing configuration
	// applies (commit.gpgSign, gpg.program, the ssh or gpg agent): merge,
	// squash and rebased commits are the person's commits and are signed
	// the way their own would be.
	signing
	// personal is the person's own git: their hooks, signing, filters and
	// credentials, with an absolute git binary and a minimal environment.
	// Only approved commits and pushes run this way, because the person
	// approved exactly that commit or push and would have run those hooks
	// themselves.
	personal
)

// writeConfig is added to the read hardening for processes that write.
var writeConfig = []string{
	// Sluice's own objects (restore points) are not the person's commits.
	"commit.gpgSign=false",
	// A rebase must replay exactly the approved branch, and move nothing
	// but it.
	"rebase.autoStash=false",
	"rebase.autoSquash=false",
	"rebase.updateRefs=false",
	"rebase.missingCommitsCheck=ignore",
	"merge.autoStash=false",
	// Recorded resolutions would change a computed result behind the
	// person's back.
	"rerere.enabled=false",
	"advice.detachedHead=false",
	"worktree.guessRemote=false",
	"core.editor=true",
	"sequence.editor=true",
}

// signingEnv are variables a signing program needs to reach the person's
// keys: the ssh agent, gpg's home and agent, a display for pinentry.
var signingEnv = []string{"SSH_AUTH_SOCK", "GNUPGHOME", "GPG_TTY", "GPG_AGENT_INFO", "DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS"}

// systemScoped are the parts of the hardened environment that keep the
// system configuration out; the person's own git reads it.
var systemScoped = []string{"GIT_CONFIG_NOSYSTEM=", "GIT_ATTR_NOSYSTEM="}

// Internal identity: the restore points' bookkeeping commits are made by
// Sluice, never under the person's name.
var sluiceIdentity = []string{
	"GIT_AUTHOR_NAME=Sluice", "GIT_AUTHOR_EMAIL=sluice@localhost",
	"GIT_COMMITTER_NAME=Sluice", "GIT_COMMITTER_EMAIL=sluice@localhost",
}

// stderrCap bounds what is kept of a process's stderr (hook output
// included).
const stderrCap = 64 << 10

// stdoutCap bounds stdout; nothing the executor parses comes near it.
const stdoutCap = 64 << 20

// gitEnv starts git processes for one repository.
type gitEnv struct {
	bin     string
	hard    []string // environment of hardened processes
	signEnv []string // hardened plus what signing needs
	user    []string // environment of personal processes
	args    []string // leading arguments of hardened processes
	timeout time.Duration
	// zero is the null object id of the repository's hash.
	zero string
}

func newGitEnv(r *gitx.Runner, repo *gitx.Repo, timeout time.Duration) *gitEnv {
	base := r.Env()
	hard := append(slices.Clone(base), repo.Env()...)
	hard = append(hard, "GIT_EDITOR=true", "GIT_SEQUENCE_EDITOR=true", "GIT_MERGE_AUTOEDIT=no")
	var extra []string
	for _, k := range signingEnv {
		if v, ok := os.LookupEnv(k); ok {
			extra = append(extra, k+"="+v)
		}
	}
	user := slices.DeleteFunc(slices.Clone(base), func(kv string) bool {
		for _, p := range systemScoped {
			if strings.HasPrefix(kv, p) {
				return true
			}
		}
		return false
	})
	user = append(user, extra...)
	user = append(user, "GIT_EDITOR=true", "GIT_SEQUENCE_EDITOR=true", "GIT_MERGE_AUTOEDIT=no")
	// The ceiling keeps discovery inside the allowed root for the
	// person's git too; the filter overrides do not apply to it.
	for _, kv := range repo.Env() {
		if strings.HasPrefix(kv, "GIT_CEILING_DIRECTORIES=") {
			user = append(user, kv)
		}
	}
	args := []string{"--no-pager", "--literal-pathspecs"}
	for _, kv := range append(gitx.HardeningConfig(), writeConfig...) {
		args = append(args, "-c", kv)
	}
	zero := strings.Repeat("0", 40)
	if repo.ObjectFormat == "sha256" {
		zero = strings.Repeat("0", 64)
	}
	return &gitEnv{bin: r.Path(), hard: hard, signEnv: append(slices.Clone(hard), extra...), user: user, args: args, timeout: timeout, zero: zero}
}

// call is one git invocation. args are trusted by the time they get here:
// every revision and path an agent named was validated by core/proposal
// and every SHA was resolved by git; paths still go after "--" and
// revisions after --end-of-options where git accepts it.
type call struct {
	dir   string
	args  []string
	stdin []byte
	env   []string
	mode  mode
	// ok lists exit codes that are answers, not failures.
	ok []int
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
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	var argv, env []string
	switch c.mode {
	case hardened:
		argv, env = slices.Concat(g.args, c.args), slices.Concat(g.hard, c.env)
	case signing:
		// The hardening list disables signing for Sluice's own objects;
		// here the person's setting must win, so it is left out.
		a := slices.Clone(g.args)
		if i := slices.Index(a, "commit.gpgSign=false"); i > 0 {
			a = slices.Delete(a, i-1, i+1)
		}
		argv, env = slices.Concat(a, c.args), slices.Concat(g.signEnv, c.env)
	case personal:
		argv = slices.Concat([]string{"--no-pager", "--literal-pathspecs", "-c", "core.pager=cat", "-c", "color.ui=false",
			"-c", "gc.auto=0", "-c", "maintenance.auto=false", "-c", "protocol.ext.allow=never", "-c", "protocol.fd.allow=never"}, c.args)
		env = slices.Concat(g.user, c.env)
	}
	cmd := exec.Command(g.bin, argv...)
	cmd.Dir = c.dir
	cmd.Env = env
	if c.stdin != nil {
		cmd.Stdin = bytes.NewReader(c.stdin)
	}
	var stdout bytes.Buffer
	stderr := &gitx.Capped{Max: stderrCap}
	cmd.Stdout = &limited{w: &stdout, n: stdoutCap}
	cmd.Stderr = stderr
	cmd.WaitDelay = 2 * time.Second
	gitx.SetProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		return result{}, fmt.Errorf("apply: start git: %w", err)
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			gitx.KillProcessGroup(cmd.Process)
		case <-done:
		}
	}()
	err := cmd.Wait()
	close(done)
	res := result{out: stdout.Bytes(), stderr: stderr.String()}
	if ctx.Err() != nil {
		return res, &Error{Code: CodeGitFailed, Msg: fmt.Sprintf("git %s did not finish within %s and was stopped", subcommand(c.args), g.timeout), Err: ctx.Err()}
	}
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return res, fmt.Errorf("apply: git %s: %w", subcommand(c.args), err)
		}
		res.exit = ee.ExitCode()
		if !slices.Contains(c.ok, res.exit) {
			return res, gitFailed(c.args, res)
		}
	}
	return res, nil
}

func subcommand(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return "?"
}

func gitFailed(args []string, res result) *Error {
	s := strings.TrimSpace(res.stderr)
	first := s
	if i := strings.IndexByte(first, '\n'); i >= 0 {
		first = first[:i]
	}
	first = strings.TrimPrefix(strings.TrimPrefix(first, "fatal: "), "error: ")
	return &Error{Code: CodeGitFailed,
		Msg:  fmt.Sprintf("git %s failed (exit %d): %s", subcommand(args), res.exit, clip(first, 300)),
		Data: GitFailure{Command: subcommand(args), ExitCode: res.exit, Stderr: clip(s, 4096)}}
}

// stderrOf is the stderr of a git failure, or "".
func stderrOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		if f, ok := e.Data.(GitFailure); ok {
			return f.Stderr
		}
	}
	return ""
}

// limited passes the first n bytes on and fails after that, which stops
// a runaway process instead of buffering it.
type limited struct {
	w *bytes.Buffer
	n int
}

var errOutputLimit = errors.New("git output exceeded the executor's limit")

func (l *limited) Write(p []byte) (int, error) {
	if len(p) > l.n {
		return 0, errOutputLimit
	}
	l.n -= len(p)
	return l.w.Write(p)
}
