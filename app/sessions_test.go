package app

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
	confined "github.com/sluicehq/sluice/core/session"
)

// The life of a session's changes after it ends, on a real app, gateway,
// journal and repository (no sandbox: the test is the launcher, and it
// writes the session's copy itself, as its agent would). Nothing of the
// agent's is lost whatever becomes of its cards, and nothing is offered
// twice.

type sessionFixture struct {
	a       *App
	api     *API
	repo    string
	grant   gateway.SessionGrant
	gw      *gateway.Client // the gateway's own token (the launcher's)
	session *gateway.Client // the session's token (its sidecar's)
}

func newSessionFixture(t *testing.T) *sessionFixture {
	t.Helper()
	a, repo, _ := flowEnv(t)
	gw, err := gateway.NewClientFromEndpoint(a.cfg.GatewayFile())
	if err != nil {
		t.Fatal(err)
	}
	g, err := gw.RegisterSession(t.Context(), gateway.SessionRequest{Client: "claude-code", Dir: repo, Runtime: "bubblewrap", LauncherPID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := gateway.NewClient(a.GatewayAddr(), g.Token)
	if err != nil {
		t.Fatal(err)
	}
	return &sessionFixture{a: a, api: &API{app: a, kind: "web"}, repo: repo, grant: g, gw: gw, session: sc}
}

// write changes a file in the session's copy, as its agent would.
func (f *sessionFixture) write(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(f.grant.Copy, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// propose has the session's agent propose a commit of paths.
func (f *sessionFixture) propose(t *testing.T, paths ...string) string {
	t.Helper()
	st, err := f.session.SubmitProposal(t.Context(), f.grant.Agent, f.commit(t, paths...))
	if err != nil {
		t.Fatal(err)
	}
	return st.ProposalID
}

// commit is the session's agent's proposal of a commit of paths.
func (f *sessionFixture) commit(t *testing.T, paths ...string) proposal.Proposal {
	t.Helper()
	head := strings.TrimSpace(gitIn(t, f.repo, "rev-parse", "HEAD"))
	now := time.Now()
	p := proposal.Proposal{
		ID: fmt.Sprintf("s-%d", now.UnixNano()), Op: proposal.OpCommit, Repo: f.repo,
		Pinned: proposal.Pinned{Refs: map[string]string{"HEAD": head}},
		Args:   &proposal.CommitArgs{Message: "agent: " + strings.Join(paths, ", "), Paths: paths},
		Reason: "the agent's change", Agent: f.grant.Agent,
		CreatedAt: proposal.At(now), ExpiresAt: proposal.At(now.Add(10 * time.Minute)),
	}
	if err := p.Seal(); err != nil {
		t.Fatal(err)
	}
	return p
}

func (f *sessionFixture) record(t *testing.T) *confined.Session {
	t.Helper()
	s, err := f.a.sessions.store.Get(f.grant.ID)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *sessionFixture) rec(t *testing.T, id string) journal.Record {
	t.Helper()
	r, err := f.a.journal.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// files are the paths a card's sealed outcome holds.
func (f *sessionFixture) files(t *testing.T, id string) string {
	t.Helper()
	var out []string
	for _, x := range f.rec(t, id).Proposal.Sealed.Files {
		out = append(out, x.Path)
	}
	return strings.Join(out, ",")
}

// openLeftovers are the session's leftover cards still open.
func (f *sessionFixture) openLeftovers(t *testing.T) []string {
	t.Helper()
	recs, err := f.a.journal.List(journal.Filter{States: openStates})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		if o := r.Proposal.Origin; o != nil && o.Session == f.grant.ID && o.Leftover {
			out = append(out, r.Proposal.ID)
		}
	}
	return out
}

// approve approves card id as the person and waits for it to land.
func (f *sessionFixture) approve(t *testing.T, id string) {
	t.Helper()
	if _, err := f.api.Approve(Decision{ID: id, Digest: f.rec(t, id).Proposal.Digest}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, id+" to land", func() bool {
		st := f.rec(t, id).State
		if st.Terminal() && st != proposal.Completed {
			t.Fatalf("%s ended %s: %+v", id, st, f.rec(t, id).Outcome)
		}
		return st == proposal.Completed
	})
}

// gitIn runs git in dir as the person.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// While its launcher runs, a session is ended by the launcher only: the
// gateway's token alone (which every unconfined agent holds) is refused.
func TestSessions_EndedByItsLauncherOnly(t *testing.T) {
	f := newSessionFixture(t)
	for _, tok := range []string{"", "sluice_session_" + strings.Repeat("ab", 32)} {
		if _, err := f.gw.EndSession(t.Context(), f.grant.ID, tok); !errcode.IsCode(err, errcode.Forbidden) {
			t.Fatalf("ended with token %q: %v", tok, err)
		}
	}
	if s := f.record(t); s.State != confined.StateRunning {
		t.Fatalf("the session is %s after refused ends", s.State)
	}
	end, err := f.gw.EndSession(t.Context(), f.grant.ID, f.grant.Token)
	if err != nil {
		t.Fatal(err)
	}
	if end.Leftover != "" || f.record(t).State != confined.StateClosed {
		t.Fatalf("a session that changed nothing: %+v, state %s", end, f.record(t).State)
	}
}

// What a session left is offered once, whatever crashes between making
// its card and recording it; its agent's own card that is still open
// keeps the copy; a card that expired or was sent back as stale has its changes
// offered again; a rejection lets them go and closes the session.
func TestSessions_ChangesOutliveTheirCards(t *testing.T) {
	f := newSessionFixture(t)
	f.write(t, "README.md", "hello from the copy\n")
	f.write(t, "b.txt", "b\n")
	agentCard := f.propose(t, "b.txt")

	end, err := f.gw.EndSession(t.Context(), f.grant.ID, f.grant.Token)
	if err != nil {
		t.Fatal(err)
	}
	left := end.Leftover
	if left == "" || f.files(t, left) != "README.md" {
		t.Fatalf("the leftover card %q holds %q, want README.md alone (b.txt is on the agent's open card)", left, f.files(t, left))
	}

	// A crash between making the card and recording it: the record has
	// no card, and the next offer finds the open one instead of making
	// a second.
	if _, err := f.a.sessions.store.Update(f.grant.ID, func(s *confined.Session) error { s.Leftover = ""; return nil }); err != nil {
		t.Fatal(err)
	}
	again, err := f.a.sessions.offerAgain(t.Context(), f.grant.ID, false)
	if err != nil && !errcode.IsCode(err, errcode.Conflict) {
		t.Fatal(err)
	}
	if got := f.openLeftovers(t); len(got) != 1 || got[0] != left {
		t.Fatalf("open leftover cards %v after the offer again (%+v), want only %s", got, again, left)
	}
	waitFor(t, time.Minute, "the record to name its card again", func() bool {
		if _, err := f.a.sessions.offerAgain(t.Context(), f.grant.ID, false); err != nil && !errcode.IsCode(err, errcode.Conflict) {
			t.Fatal(err)
		}
		return f.record(t).Leftover == left
	})

	// The leftover lands; the agent's card is still open, so the copy
	// stays for it.
	f.approve(t, left)
	if s := f.record(t); s.State != confined.StateEnded {
		t.Fatalf("the session is %s while its agent's card is open", s.State)
	}
	if _, err := f.api.OfferSessionChanges(f.grant.ID); !errcode.IsCode(err, errcode.Conflict) {
		t.Fatalf("offered again while a card of the session is open: %v", err)
	}

	// The agent's card expires undecided (the session's token ended with
	// the session, so nobody else can act on it): b.txt is offered, once.
	if _, err := f.a.journal.Transition(agentCard, proposal.Pending, proposal.Expired, journal.Details{By: "test", Note: "expired"}); err != nil {
		t.Fatal(err)
	}
	var second string
	waitFor(t, time.Minute, "b.txt to be offered", func() bool {
		second = f.record(t).Leftover
		return second != left && second != ""
	})
	if got := f.files(t, second); got != "b.txt" {
		t.Fatalf("the second card holds %q, want b.txt", got)
	}

	// The person commits their own b.txt: the card is stale (a commit of
	// another file would only re-seal it), and sending it back offers
	// b.txt again against the new HEAD rather than letting it go.
	if err := os.WriteFile(filepath.Join(f.repo, "b.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, f.repo, "add", "b.txt")
	gitIn(t, f.repo, "commit", "-q", "-m", "the person's own")
	if _, err := f.api.SendBack(Decision{ID: second, Digest: f.rec(t, second).Proposal.Digest}); err != nil {
		t.Fatal(err)
	}
	var third string
	waitFor(t, time.Minute, "b.txt to be offered again after the send-back", func() bool {
		third = f.record(t).Leftover
		return third != second && third != ""
	})
	if got := f.files(t, third); got != "b.txt" || f.rec(t, third).Proposal.Pinned.Refs["HEAD"] != strings.TrimSpace(gitIn(t, f.repo, "rev-parse", "HEAD")) {
		t.Fatalf("the third card holds %q pinned to %s", got, f.rec(t, third).Proposal.Pinned.Refs["HEAD"])
	}
	if _, err := f.api.OfferSessionChanges(f.grant.ID); !errcode.IsCode(err, errcode.Conflict) {
		t.Fatalf("offered again while its card is open: %v", err)
	}

	// The person rejects it: the changes go, the session closes.
	if _, err := f.api.Reject(Decision{ID: third, Digest: f.rec(t, third).Proposal.Digest}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the session to close", func() bool { return f.record(t).State == confined.StateClosed })
	if _, err := os.Stat(f.grant.Copy); !os.IsNotExist(err) {
		t.Fatalf("the copy is still there: %v", err)
	}
	if _, err := f.api.OfferSessionChanges(f.grant.ID); !errcode.IsCode(err, errcode.Conflict) {
		t.Fatalf("a closed session offered changes: %v", err)
	}
	if got := f.openLeftovers(t); len(got) != 0 {
		t.Fatalf("open leftover cards after the close: %v", got)
	}
	if b, _ := os.ReadFile(filepath.Join(f.repo, "README.md")); string(b) != "hello from the copy\n" {
		t.Fatalf("the landed leftover is not in the checkout: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(f.repo, "b.txt")); string(b) != "mine\n" {
		t.Fatalf("b.txt in the checkout is %q, want the person's own (the session's, rejected, must not land)", b)
	}
}

// A leftover card that expired (or failed) waits for the person: the
// Sessions screen offers it again, and doing so keeps the old card the
// session's until the new one exists.
func TestSessions_OfferAgainAfterExpiry(t *testing.T) {
	f := newSessionFixture(t)
	f.write(t, "README.md", "changed\n")
	end, err := f.gw.EndSession(t.Context(), f.grant.ID, f.grant.Token)
	if err != nil || end.Leftover == "" {
		t.Fatalf("end: %+v %v", end, err)
	}
	if _, err := f.a.journal.Transition(end.Leftover, proposal.Pending, proposal.Expired, journal.Details{By: "test", Note: "expired"}); err != nil {
		t.Fatal(err)
	}
	views, err := f.api.Sessions()
	if err != nil || len(views) != 1 || !views[0].CanOffer {
		t.Fatalf("the Sessions screen: %+v %v, want Offer again", views, err)
	}
	// tend leaves it to the person: the record still names the expired
	// card after a round.
	f.a.sessions.tendOnce(t.Context())
	if s := f.record(t); s.Leftover != end.Leftover {
		t.Fatalf("tend offered an expired card again by itself: %s", s.Leftover)
	}
	res, err := f.api.OfferSessionChanges(f.grant.ID)
	if err != nil || res.Proposal == "" || res.Proposal == end.Leftover || f.files(t, res.Proposal) != "README.md" {
		t.Fatalf("offer again: %+v %v", res, err)
	}
	if f.record(t).Leftover != res.Proposal {
		t.Fatalf("the record names %s, not the new card %s", f.record(t).Leftover, res.Proposal)
	}
}

// A session that ends while a proposal of its agent is still being sealed
// offers what it left only once that proposal is stored, so no file is on
// two cards; the session's token proposes nothing more meanwhile.
func TestSessions_EndWhileAProposalIsSealed(t *testing.T) {
	held, letGo := holdFirstSeal(t)
	f := newSessionFixture(t)
	t.Cleanup(letGo)
	f.write(t, "README.md", "hello from the copy\n")
	f.write(t, "b.txt", "b\n")

	p := f.commit(t, "b.txt")
	proposed := make(chan error, 1)
	go func() {
		_, err := f.session.SubmitProposal(t.Context(), f.grant.Agent, p)
		proposed <- err
	}()
	<-held

	end, err := f.gw.EndSession(t.Context(), f.grant.ID, f.grant.Token)
	if err != nil {
		t.Fatal(err)
	}
	if end.Leftover != "" || !strings.Contains(end.Message, "still being sealed") {
		t.Fatalf("ended while its proposal is sealed: %+v; want no card yet (b.txt would be on two)", end)
	}
	if s := f.record(t); s.State != confined.StateEnded || s.Leftover != "" || !strings.Contains(s.Note, "still being sealed") {
		t.Fatalf("the session is %s naming card %q, note %q, while its proposal is sealed", s.State, s.Leftover, s.Note)
	}
	late := f.commit(t, "README.md")
	if _, err := f.session.SubmitProposal(t.Context(), f.grant.Agent, late); err == nil {
		t.Fatal("the ended session's token proposed")
	}
	if _, err := f.a.journal.Get(late.ID); err == nil {
		t.Fatal("the ended session's late proposal is a card")
	}

	letGo()
	var agentCard string
	waitFor(t, time.Minute, "the agent's card to be stored", func() bool {
		recs, err := f.a.journal.List(journal.Filter{States: openStates})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if o := r.Proposal.Origin; o != nil && o.Session == f.grant.ID && !o.Leftover {
				agentCard = r.Proposal.ID
			}
		}
		return agentCard != ""
	})
	if err := <-proposed; err != nil {
		t.Fatalf("the agent's proposal: %v", err)
	}
	if got := f.files(t, agentCard); got != "b.txt" || agentCard != p.ID {
		t.Fatalf("the agent's card holds %q", got)
	}
	var left string
	waitFor(t, time.Minute, "what the session left besides to be offered", func() bool {
		left = f.record(t).Leftover
		return left != ""
	})
	if got := f.files(t, left); got != "README.md" {
		t.Fatalf("the leftover card holds %q, want README.md alone (b.txt is on the agent's card)", got)
	}
	if got := f.openLeftovers(t); len(got) != 1 || got[0] != left {
		t.Fatalf("open leftover cards %v, want only %s", got, left)
	}
	if n := f.record(t).Note; strings.Contains(n, "still being sealed") {
		t.Fatalf("the session's note still says %q", n)
	}
}
