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

// TestAPI_AutoApprovals_NewestDecisionFirst: the feed beside the pending
// list names what rules approved, the newest decision first, and nothing
// a person decided.
func TestAPI_AutoApprovals_NewestDecisionFirst(t *testing.T) {
	a := startApp(t)
	start := time.Now().Add(-time.Hour)
	var ids []string
	for i := range 4 {
		p := proposal.Proposal{
			ID: fmt.Sprintf("auto-%d", i), Op: proposal.OpCommit, Repo: "/work/src/widgets",
			Args:   &proposal.CommitArgs{Message: "update", Paths: []string{"README.md"}, Branch: "agent/x"},
			Reason: "routine", Agent: "agent-a",
			Pinned: proposal.Pinned{Refs: map[string]string{
				"HEAD":               "0123456789abcdef0123456789abcdef01234567",
				"refs/heads/agent/x": "0123456789abcdef0123456789abcdef01234567",
			}},
			CreatedAt: proposal.At(start.Add(time.Duration(i) * time.Second)), ExpiresAt: proposal.At(time.Now().Add(time.Hour)),
		}
		if err := p.Seal(); err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.journal.Submit(p); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
	}
	// The newest proposal is decided first: the feed follows the
	// decisions (one in the same millisecond comes in id order).
	for _, i := range []int{3, 0, 2} {
		rec, err := a.journal.Get(ids[i])
		if err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			_, err = a.journal.Approve(ids[i], rec.Proposal.Digest, "owner:web", "")
		} else {
			_, err = a.journal.ApproveAuto(ids[i], rec.Proposal.Digest, fmt.Sprintf("rule-%d", i))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	api := &API{app: a, kind: "web"}
	feed, err := api.AutoApprovals()
	if err != nil {
		t.Fatal(err)
	}
	if len(feed) != 2 || feed[0].ID != ids[0] || feed[0].Rule != "rule-0" || feed[1].ID != ids[3] {
		t.Fatalf("feed %+v", feed)
	}
}
