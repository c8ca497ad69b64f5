//go:build unix

package intake

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/proposal"
)

// heldSeal is a real gateway and executor whose seals stop at their start
// until released, as a very large change's seal takes its time.
type heldSeal struct {
	client  *gateway.Client
	repo    *gitxtest.Repo
	seals   atomic.Int32
	held    chan struct{}
	release chan struct{}
}

func newHeldSeal(t *testing.T) *heldSeal {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := &heldSeal{repo: gitxtest.InitAt(t, filepath.Join(root, "repo")), held: make(chan struct{}), release: make(chan struct{})}
	h.repo.WriteCommit("a.txt", "one\n", "base")
	db := filepath.Join(t.TempDir(), "journal.db")
	j, _, b := openSealBackend(t, root, db, func(step string) {
		if step != "seal-start" {
			return
		}
		if h.seals.Add(1) == 1 {
			close(h.held)
		}
		<-h.release
	})
	_, h.client, _ = serve(t, b, j, db)
	return h
}

// submitAndGiveUp sends p and gives up waiting once its seal has begun,
// as the sidecar does when its deadline passes.
func (h *heldSeal) submitAndGiveUp(t *testing.T, p proposal.Proposal) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := h.client.SubmitProposal(ctx, "agent-a", p)
		errc <- err
	}()
	<-h.held
	cancel()
	if err := <-errc; !errors.Is(err, gateway.ErrAnswerLost) {
		t.Fatalf("the abandoned submit ended with %v: want an answer lost", err)
	}
}

// settled waits until id is no longer being sealed and returns what its
// status read says then.
func (h *heldSeal) settled(t *testing.T, id string) (gateway.ProposalStatus, error) {
	t.Helper()
	for {
		st, err := h.client.GetProposal(context.Background(), "agent-a", id)
		if err != nil || st.Status != gateway.StatusSealing {
			return st, err
		}
		time.Sleep(5 * time.Millisecond) // a pause between reads, not a deadline
	}
}

// TestSubmit_SealOutlastsTheRequest: the request that brought a proposal
// gives up while its outcome is being sealed; the seal goes on, the
// proposal's status says "sealing" to its agent (and nothing to another),
// a resend joins the same seal, and the proposal becomes a card.
func TestSubmit_SealOutlastsTheRequest(t *testing.T) {
	h := newHeldSeal(t)
	h.repo.Write("a.txt", "two\n")
	p := sealedProposal(t, h.repo.Dir, &proposal.CommitArgs{Message: "Change a", Paths: []string{"a.txt"}})
	h.submitAndGiveUp(t, p)

	st, err := h.client.GetProposal(context.Background(), "agent-a", p.ID)
	if err != nil || st.Status != gateway.StatusSealing || st.ProposalID != p.ID {
		t.Fatalf("status while sealing: %+v %v", st, err)
	}
	if _, err := h.client.GetProposal(context.Background(), "agent-b", p.ID); !errcode.IsCode(err, errcode.ProposalNotFound) {
		t.Errorf("another agent reads the seal under way: %v", err)
	}
	resent := make(chan gateway.ProposalStatus, 1)
	go func() {
		st, err := h.client.SubmitProposal(context.Background(), "agent-a", p)
		if err != nil {
			t.Errorf("resend: %v", err)
		}
		resent <- st
	}()
	close(h.release)

	st, err = h.settled(t, p.ID)
	if err != nil || st.Status != proposal.Pending || st.Digest == "" || st.Digest == p.Digest {
		t.Fatalf("after the seal: %+v %v; want it pending with its sealed digest", st, err)
	}
	if r := <-resent; r.ProposalID != p.ID || r.Digest != st.Digest {
		t.Errorf("the resend answered %+v: want the same proposal", r)
	}
	if n := h.seals.Load(); n != 1 {
		t.Errorf("sealed %d times: a resend joins the seal under way", n)
	}
}

// TestSubmit_SealOutlastsTheRequest_Refused: a seal that refuses the
// proposal after its request gave up tells why to the status read and the
// wait that follow it.
func TestSubmit_SealOutlastsTheRequest_Refused(t *testing.T) {
	h := newHeldSeal(t)
	p := sealedProposal(t, h.repo.Dir, &proposal.CommitArgs{Message: "Nothing", Paths: []string{"a.txt"}})
	h.submitAndGiveUp(t, p)
	close(h.release)
	if _, err := h.settled(t, p.ID); !errcode.IsCode(err, errcode.NothingToCommit) {
		t.Fatalf("status after a refused seal: %v; want nothing_to_commit", err)
	}
	if _, err := h.client.WaitProposal(context.Background(), "agent-a", p.ID, 0); !errcode.IsCode(err, errcode.NothingToCommit) {
		t.Errorf("wait after a refused seal: %v; want nothing_to_commit", err)
	}
}

// TestSubmit_SealsUnderWay_Bounded: an agent can have a few seals under
// way at once, not an unbounded queue of them (a seal outlives its
// request); one more is refused with too_many_pending, and once the seals
// end the agent may propose again.
func TestSubmit_SealsUnderWay_Bounded(t *testing.T) {
	h := newHeldSeal(t)
	var ids []string
	done := make(chan error, maxSealing)
	for i := range maxSealing {
		h.repo.Write("a.txt", fmt.Sprintf("change %d\n", i))
		p := sealedProposal(t, h.repo.Dir, &proposal.CommitArgs{Message: "Change a", Paths: []string{"a.txt"}})
		ids = append(ids, p.ID)
		go func() {
			_, err := h.client.SubmitProposal(context.Background(), "agent-a", p)
			done <- err
		}()
	}
	// Wait until every one of them is being sealed.
	for _, id := range ids {
		for {
			st, err := h.client.GetProposal(context.Background(), "agent-a", id)
			if err == nil && st.Status == gateway.StatusSealing {
				break
			}
			time.Sleep(5 * time.Millisecond) // a pause between reads, not a deadline
		}
	}
	one := sealedProposal(t, h.repo.Dir, &proposal.CommitArgs{Message: "One more", Paths: []string{"a.txt"}})
	if _, err := h.client.SubmitProposal(context.Background(), "agent-a", one); !errcode.IsCode(err, errcode.TooManyPending) {
		t.Fatalf("one more seal than the bound: %v; want too_many_pending", err)
	}
	close(h.release)
	for range ids {
		<-done
	}
	h.repo.Write("a.txt", "after\n")
	again := sealedProposal(t, h.repo.Dir, &proposal.CommitArgs{Message: "After", Paths: []string{"a.txt"}})
	if _, err := h.client.SubmitProposal(context.Background(), "agent-a", again); err != nil {
		t.Fatalf("a proposal once the seals ended: %v", err)
	}
}

// TestCloseSession_CountsAndRefuses: a session told ended counts its
// seals still under way, and no proposal of its agent starts sealing
// from then on; the app's own card of what the session left still does.
func TestCloseSession_CountsAndRefuses(t *testing.T) {
	root, repo := baseRepo(t)
	held, release := make(chan struct{}), make(chan struct{})
	var seals atomic.Int32
	_, _, b := openSealBackend(t, root, filepath.Join(t.TempDir(), "journal.db"), func(step string) {
		if step == "seal-start" && seals.Add(1) == 1 {
			close(held)
			<-release
		}
	})
	caller := func(leftover bool) context.Context {
		return gateway.WithCaller(context.Background(), &gateway.Caller{Session: "s1", Agent: "agent-a", Repo: repo.Dir,
			Origin: &proposal.Origin{Session: "s1", Runtime: "bubblewrap", Leftover: leftover}})
	}
	repo.Write("a.txt", "two\n")
	first := make(chan error, 1)
	go func() {
		_, err := b.Submit(caller(false), "agent-a", sealedProposal(t, repo.Dir, &proposal.CommitArgs{Message: "Change a", Paths: []string{"a.txt"}}))
		first <- err
	}()
	<-held
	if n := b.CloseSession("s2"); n != 0 {
		t.Errorf("another session has %d seals under way", n)
	}
	if n := b.CloseSession("s1"); n != 1 {
		t.Fatalf("the session has %d seals under way, want 1", n)
	}
	_, err := b.Submit(caller(false), "agent-a", sealedProposal(t, repo.Dir, &proposal.CommitArgs{Message: "Change a again", Paths: []string{"a.txt"}}))
	if !errcode.IsCode(err, errcode.Forbidden) {
		t.Fatalf("an ended session's proposal: %v; want forbidden", err)
	}
	close(release)
	// The first proposal's outcome is not this test's: with no session
	// copies here its seal may refuse it. It counted while it ran.
	<-first
	if n := b.CloseSession("s1"); n != 0 {
		t.Fatalf("%d seals under way after the seal ended", n)
	}
	if _, err := b.Submit(caller(true), "agent-a", sealedProposal(t, repo.Dir, &proposal.CommitArgs{Message: "Left", Paths: []string{"a.txt"}})); errcode.IsCode(err, errcode.Forbidden) {
		t.Fatalf("the app's card of what the session left: %v", err)
	}
	if n := seals.Load(); n != 2 {
		t.Fatalf("%d seals began, want 2 (the ended session's own proposal never began)", n)
	}
}
