package apply

import (
	"context"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
)

// pushStep pushes the pinned commit of a branch. It runs the person's git
// (their credentials, transport configuration and pre-push hook): a push
// needs them, and the person approved this push. A forced push is only
// ever --force-with-lease against the remote-tracking SHA that was pinned,
// never a bare force.
type pushStep struct{ a *proposal.PushArgs }

func (s *pushStep) name() proposal.Op { return proposal.OpPush }

func (s *pushStep) touch(_ context.Context, r *run, t touches) error {
	t.of(r.main).addRef(s.a.LeaseRef())
	if s.a.SetUpstream {
		t.of(r.main).addConfig(s.a.Branch)
	}
	t.of(r.main).note = "a restore puts back the local remote-tracking ref and branch configuration only; what was pushed stays on the remote"
	return nil
}

func (s *pushStep) check(context.Context, *run) error { return nil }

func (s *pushStep) do(ctx context.Context, r *run, w *writing) error {
	rc := r.main
	sha := r.expect[proposal.BranchRef(s.a.Branch)]
	dst := proposal.BranchRef(s.a.RemoteName())
	args := []string{"push", "--porcelain"}
	if s.a.ForceWithLease {
		args = append(args, "--force-with-lease="+dst+":"+r.expect[s.a.LeaseRef()])
	}
	r.e.step("before-push")
	// The person's git: they approved this push, which needs their
	// credentials, and their pre-push hook runs as it would for them.
	res, err := rc.g.run(ctx, call{dir: rc.path, args: args, revs: []string{s.a.Remote, sha + ":" + dst}, profile: gitx.ProfilePerson, ok: []int{1}})
	if err != nil {
		return err
	}
	flag, summary := pushStatus(string(res.out), dst)
	if res.exit != 0 || flag == "!" {
		switch {
		case strings.Contains(summary, "stale info"):
			return &errcode.Error{Code: errcode.StaleBase, Data: map[string]string{s.a.Remote + ":" + dst: ""},
				Msg: fmt.Sprintf("the remote branch %s on %s moved since the proposal was made, so the lease refused the forced push; nothing was pushed", s.a.RemoteName(), s.a.Remote)}
		case summary != "":
			return &errcode.Error{Code: errcode.PushRejected, Data: errcode.GitFailure{Command: "push", ExitCode: res.exit, Stderr: clip(res.stderr, 4096)},
				Msg: fmt.Sprintf("%s refused the push of %s: %s", s.a.Remote, s.a.RemoteName(), summary)}
		}
		return failed("push", gitx.ProfilePerson, res)
	}
	r.changed = true
	if s.a.SetUpstream {
		for _, kv := range [][2]string{{"branch." + s.a.Branch + ".remote", s.a.Remote}, {"branch." + s.a.Branch + ".merge", dst}} {
			if _, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"config", "--local", kv[0], kv[1]}}); err != nil {
				return err
			}
		}
	}
	how := "pushed"
	if s.a.ForceWithLease {
		how = "force-pushed (with lease)"
	}
	r.note("%s %s (%s) to %s as %s", how, s.a.Branch, short(sha), s.a.Remote, s.a.RemoteName())
	return nil
}
