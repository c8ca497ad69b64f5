package app

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/proposal"
)

// TestAPI_Pending_OldestPage: with more proposals waiting than the
// pending list holds, it shows the oldest pendingPage of them, oldest
// first, and the status counts every one.
func TestAPI_Pending_OldestPage(t *testing.T) {
	a := startApp(t)
	start := time.Now().Add(-time.Hour)
	n := pendingPage + 3
	for i := range n {
		p := proposal.Proposal{
			ID: fmt.Sprintf("wait-%05d", i), Op: proposal.OpCommit, Repo: "/work/src/widgets",
			Args:   &proposal.CommitArgs{Message: "update", Paths: []string{fmt.Sprintf("f%d.txt", i)}, Branch: "agent/x"},
			Reason: "routine", Agent: fmt.Sprintf("agent-%d", i%100),
			Pinned: proposal.Pinned{Refs: map[string]string{
				"HEAD":               "0123456789abcdef0123456789abcdef01234567",
				"refs/heads/agent/x": "0123456789abcdef0123456789abcdef01234567",
			}},
			// Newest first in the journal's order of arrival.
			CreatedAt: proposal.At(start.Add(time.Duration(n-i) * time.Second)), ExpiresAt: proposal.At(time.Now().Add(time.Hour)),
		}
		if err := p.Seal(); err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.journal.Submit(p); err != nil {
			t.Fatalf("submit %d: %v", i, err)
		}
	}
	api := &API{app: a, kind: "web"}
	cards, err := api.Pending()
	if err != nil {
		t.Fatal(err)
	}
	if len(cards) != pendingPage || cards[0].ID != fmt.Sprintf("wait-%05d", n-1) || cards[len(cards)-1].ID != fmt.Sprintf("wait-%05d", n-pendingPage) {
		t.Fatalf("%d cards from %s to %s", len(cards), cards[0].ID, cards[len(cards)-1].ID)
	}
	for i := 1; i < len(cards); i++ {
		if cards[i].CreatedAt.Before(cards[i-1].CreatedAt.Time) {
			t.Fatalf("card %d is older than the one before it", i)
		}
	}
	if got, err := a.countPending(); err != nil || got != n {
		t.Errorf("count %d, %v; want %d", got, err, n)
	}
}
