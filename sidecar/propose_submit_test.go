package sidecar

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/apply"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/intake"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// lossyGateway stands between the sidecar and the real gateway. Each
// submit is forwarded, so the app really stores it; while drop is above
// zero the answer is then thrown away and the connection closed, as when
// the app dies right after it stored the proposal.
type lossyGateway struct {
	ln      net.Listener
	target  string
	drop    atomic.Int32
	submits atomic.Int32
}

func startLossyGateway(t *testing.T, target string) *lossyGateway {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &lossyGateway{ln: ln, target: target}
	srv := &http.Server{Handler: g}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return g
}

func (g *lossyGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req, _ := http.NewRequestWithContext(r.Context(), r.Method, "http://"+g.target+r.URL.RequestURI(), bytes.NewReader(body))
	req.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if r.Method == http.MethodPost && r.URL.Path == "/v1/proposals" {
		g.submits.Add(1)
		if g.drop.Add(-1) >= 0 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(answer)
}

// useLossyGateway points e's sidecar at a lossy gateway in front of its
// real one.
func useLossyGateway(t *testing.T, e *proposeEnv) *lossyGateway {
	t.Helper()
	g := startLossyGateway(t, e.srv.Addr())
	token := e.token
	e.s.gateway = func() (*gateway.Client, error) { return gateway.NewClient(g.ln.Addr().String(), token) }
	return g
}

// pendingCount is how many proposals the journal holds for the test
// agent.
func pendingCount(t *testing.T, j *journal.Journal) int {
	t.Helper()
	recs, err := j.List(journal.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return len(recs)
}

// TestPropose_AnswerLostAfterStore_ResentUnderTheCallsKey: the app stores
// a proposal given without an idempotency key and its answer is lost; the
// call sends the same proposal again under its own key and answers with
// the stored one. The journal holds one proposal, not two.
func TestPropose_AnswerLostAfterStore_ResentUnderTheCallsKey(t *testing.T) {
	e := newProposeEnv(t, envOpt{})
	g := useLossyGateway(t, e)
	g.drop.Store(1)
	res, out := call(t, e.cs, "propose_branch", withCommon(e, map[string]any{"name": "agent/lost"}))
	if res.IsError || out.ProposalID == "" {
		t.Fatalf("propose after a lost answer: %s", resultText(res))
	}
	if n := g.submits.Load(); n < 2 {
		t.Fatalf("%d submits reached the app; want the lost one and a resend", n)
	}
	if n := pendingCount(t, e.j); n != 1 {
		t.Fatalf("the journal holds %d proposals after a lost answer and its resend, want 1", n)
	}
	if _, err := e.j.Get(out.ProposalID); err != nil || !out.Replayed {
		t.Fatalf("answer %+v: want the stored proposal, replayed (%v)", out, err)
	}
}

// TestPropose_AnswerNeverComes_SaysMayBeStoredAndHowToRetry: when no
// answer comes at all, the agent is not told the call failed: it is told
// the proposal may be stored, its id, and a key to retry with; a retry
// with that key finds the stored proposal rather than making a second.
func TestPropose_AnswerNeverComes_SaysMayBeStoredAndHowToRetry(t *testing.T) {
	e := newProposeEnv(t, envOpt{})
	g := useLossyGateway(t, e)
	defer func(d time.Duration) { submitRetryFor = d }(submitRetryFor)
	submitRetryFor = 0
	g.drop.Store(1 << 20)
	args := withCommon(e, map[string]any{"name": "agent/never"})
	res, out := call(t, e.cs, "propose_branch", args)
	if !res.IsError || out.Error == nil || out.Error.Code != errcode.GatewayUnavailable {
		t.Fatalf("propose with every answer lost: %s", resultText(res))
	}
	data, _ := out.Error.Data.(map[string]any)
	id, _ := data["proposalId"].(string)
	key, _ := data["idempotencyKey"].(string)
	if id == "" || key == "" || !strings.Contains(out.Error.Message, "may have been stored") ||
		!strings.Contains(out.Error.Message, id) || !strings.Contains(out.Error.Message, key) || !strings.Contains(out.Error.Message, "proposal_status") {
		t.Fatalf("lost answer told as %q (data %v); want that it may be stored, its id, and a key to retry with", out.Error.Message, out.Error.Data)
	}
	if _, err := e.j.Get(id); err != nil {
		t.Fatalf("the proposal named in the message is not the stored one: %v", err)
	}
	g.drop.Store(0)
	args["idempotencyKey"] = key
	res, again := call(t, e.cs, "propose_branch", args)
	if res.IsError || again.ProposalID != id || !again.Replayed {
		t.Fatalf("retry with the key from the message: %s", resultText(res))
	}
	if n := pendingCount(t, e.j); n != 1 {
		t.Fatalf("the journal holds %d proposals, want 1", n)
	}
}

// TestPropose_SealOutlastsTheSubmit_AnsweredSealing: the app takes longer
// to seal a proposal than the sidecar waits for its answer (a very large
// change). The agent is not told the app stopped answering: the call
// answers "sealing" with the proposal's id, and proposal_wait follows it
// until it is pending for the person. Nothing is sealed or stored twice.
func TestPropose_SealOutlastsTheSubmit_AnsweredSealing(t *testing.T) {
	held, release := make(chan struct{}), make(chan struct{})
	var seals atomic.Int32
	e := newProposeEnv(t, envOpt{sealer: func(j *journal.Journal, roots gitx.Roots) intake.Sealer {
		runner, err := gitx.NewRunner(gitx.RunnerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ex, err := apply.New(apply.Options{Journal: j, Roots: roots, Runner: runner, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			OnStep: func(step string) {
				if step != "seal-start" {
					return
				}
				if seals.Add(1) == 1 {
					close(held)
				}
				<-release
			}})
		if err != nil {
			t.Fatal(err)
		}
		return ex
	}})
	addr, token := e.srv.Addr(), e.token
	// The submit's deadline passes while the seal is held; the seal itself
	// is never timed.
	e.s.gateway = func() (*gateway.Client, error) {
		c, err := gateway.NewClient(addr, token)
		if err == nil {
			c.SubmitTimeout = 50 * time.Millisecond
		}
		return c, err
	}
	res, out := call(t, e.cs, "propose_branch", withCommon(e, map[string]any{"name": "agent/large"}))
	if res.IsError || out.Status != string(gateway.StatusSealing) || out.ProposalID == "" || out.NextAction != "proposal_wait" {
		t.Fatalf("propose while the seal outlasts the submit: %s", resultText(res))
	}
	<-held
	close(release)
	for {
		res, st := call(t, e.cs, "proposal_wait", map[string]any{"proposalId": out.ProposalID, "timeoutSeconds": 1})
		if res.IsError {
			t.Fatalf("proposal_wait: %s", resultText(res))
		}
		if st.Status == string(gateway.StatusSealing) {
			continue
		}
		if st.Status != string(proposal.Pending) || st.Digest == "" {
			t.Fatalf("after the seal: %s; want it pending for the person", resultText(res))
		}
		break
	}
	if n := pendingCount(t, e.j); n != 1 {
		t.Errorf("the journal holds %d proposals, want 1", n)
	}
	if n := seals.Load(); n != 1 {
		t.Errorf("sealed %d times, want once", n)
	}
}
