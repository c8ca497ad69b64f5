package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// holdFirstSeal holds the first seal of the app the test starts next at
// its start until letGo; held is closed once it is held. The caller
// registers letGo as a cleanup after starting the app, so that it runs
// before the app's own (which waits for the seal).
func holdFirstSeal(t *testing.T) (held <-chan struct{}, letGo func()) {
	h, release := make(chan struct{}), make(chan struct{})
	var holdOnce, releaseOnce sync.Once
	executorOnStep = func(step string) {
		if step == "seal-start" {
			holdOnce.Do(func() {
				close(h)
				<-release
			})
		}
	}
	t.Cleanup(func() { executorOnStep = nil })
	return h, func() { releaseOnce.Do(func() { close(release) }) }
}

// TestFlow_SealOutlastsTheSidecarsWait_SealingThenCard: an agent proposes a
// commit of 20,000 new files through the real sidecar binary, and the
// app's seal takes longer than the sidecar waits for the app's answer (15
// s; here the seal is held at its start until the agent has its answer,
// as a loaded machine would hold it). The agent is not told that the app
// is not reachable: the call answers "sealing" with the proposal's id and
// proposal_wait as what to call next, and no card exists yet. Once the
// seal ends, proposal_wait follows the proposal until it is pending, and
// its card is on the Pending screen with all 20,000 files.
func TestFlow_SealOutlastsTheSidecarsWait_SealingThenCard(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the sidecar's 15 s submit and seals 20,000 files")
	}
	const n = 20000
	held, letGo := holdFirstSeal(t)
	a, repo, env := flowEnv(t)
	t.Cleanup(letGo)
	for i := range n {
		p := filepath.Join(repo, "gen", fmt.Sprintf("d%03d", i/100), fmt.Sprintf("f%05d.txt", i))
		if i%100 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("file %d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cs := agentSession(t, env, "claude-code")
	api := &API{app: a, kind: "web"}

	out, isErr := callTool(t, cs, "propose_commit", map[string]any{
		"repoPath": repo, "reason": "Generate the fixtures", "message": "Generate the fixtures", "stageAll": true,
	})
	select {
	case <-held:
	default:
		t.Fatalf("the call answered before the app began to seal: %v", out)
	}
	id, _ := out["proposalId"].(string)
	if isErr || out["status"] != "sealing" || id == "" || out["nextAction"] != "proposal_wait" {
		t.Fatalf("propose_commit while the seal outlasts the sidecar's wait: isError=%v %v; want status sealing with the proposal's id", isErr, out)
	}
	if msg, _ := out["message"].(string); strings.Contains(msg, "not reachable") || strings.Contains(msg, "stopped answering") {
		t.Fatalf("the agent is told the app is gone: %q", msg)
	}
	if pending, err := api.Pending(); err != nil || len(pending) != 0 {
		t.Fatalf("a card before the seal ended: %v %v", pending, err)
	}

	letGo()
	deadline := time.Now().Add(5 * time.Minute) // a backstop, not a measure
	for {
		st, isErr := callTool(t, cs, "proposal_wait", map[string]any{"proposalId": id, "timeoutSeconds": 10})
		if isErr {
			t.Fatalf("proposal_wait: %v", st)
		}
		if st["status"] == "pending" {
			break
		}
		if st["status"] != "sealing" || time.Now().After(deadline) {
			t.Fatalf("proposal_wait after the seal was let go: %v", st)
		}
	}
	pending, err := api.Pending()
	if err != nil || len(pending) != 1 || pending[0].ID != id {
		t.Fatalf("the Pending screen: %+v %v; want the card of %s", pending, err, id)
	}
	rec, err := a.journal.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	if s := rec.Proposal.Sealed; s == nil || len(s.Files) != n {
		t.Fatalf("the card's outcome has %d files, want %d", len(rec.Proposal.Sealed.Files), n)
	}
}
