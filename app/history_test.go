package app

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/proposal"
)

// historyJournal starts an app whose journal holds n decided proposals
// (see fillHistory).
func historyJournal(t *testing.T, n int, reason func(i int) (why, repo string)) (*App, []string) {
	t.Helper()
	a := startApp(t)
	return a, fillHistory(t, a, n, reason)
}

// fillHistory fills a's journal with n decided proposals, one a second,
// oldest first, and returns their ids; reason gives each its reason and
// repository. They are submitted and rejected straight in the journal:
// History reads nothing else.
func fillHistory(t *testing.T, a *App, n int, reason func(i int) (why, repo string)) []string {
	t.Helper()
	start := time.Now().Add(-2 * time.Hour)
	ids := make([]string, n)
	for i := range n {
		why, repo := reason(i)
		at := start.Add(time.Duration(i) * time.Second)
		p := proposal.Proposal{
			ID: fmt.Sprintf("hist-%05d", i), Op: proposal.OpCommit, Repo: repo,
			Args:   &proposal.CommitArgs{Message: "update", Paths: []string{"README.md"}, Branch: "agent/x"},
			Reason: why, Agent: "claude-code",
			Pinned: proposal.Pinned{Refs: map[string]string{
				"HEAD":               "0123456789abcdef0123456789abcdef01234567",
				"refs/heads/agent/x": "0123456789abcdef0123456789abcdef01234567",
			}},
			CreatedAt: proposal.At(at), ExpiresAt: proposal.At(time.Now().Add(time.Hour)),
		}
		if err := p.Seal(); err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.journal.Submit(p); err != nil {
			t.Fatalf("submit %d: %v", i, err)
		}
		if _, err := a.journal.Reject(p.ID, "owner:web", ""); err != nil {
			t.Fatalf("reject %d: %v", i, err)
		}
		ids[i] = p.ID
	}
	return ids
}

// TestHistory_SearchOlderThanFirstPage_Found: a search looks at every
// record, not only the newest page of them.
func TestHistory_SearchOlderThanFirstPage_Found(t *testing.T) {
	const n = 1200
	a, ids := historyJournal(t, n, func(i int) (string, string) {
		if i == 7 {
			return "Fix the flaky clock test", "/work/src/gadgets"
		}
		return fmt.Sprintf("Routine update %d", i), "/work/src/widgets"
	})
	api := &API{app: a, kind: "web"}
	for _, q := range []HistoryQuery{
		{Text: "flaky CLOCK", Limit: 200},
		{Text: "gadgets", Limit: 200},
		{Repo: "/work/src/gadgets", Limit: 200},
		{Text: ids[7], Limit: 200},
	} {
		cards, err := api.History(q)
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		if len(cards) != 1 || cards[0].ID != ids[7] {
			got := make([]string, 0, len(cards))
			for _, c := range cards {
				got = append(got, c.ID)
			}
			t.Errorf("%+v found %v, want only %s (the 8th oldest of %d)", q, got, ids[7], n)
		}
	}
}

// TestHistory_Pages_EveryRecordOnceNewestFirst: paging with After walks
// the whole journal, and a search's matches, without a gap or a repeat.
func TestHistory_Pages_EveryRecordOnceNewestFirst(t *testing.T) {
	const n = 1100
	a, ids := historyJournal(t, n, func(i int) (string, string) {
		if i%4 == 0 {
			return fmt.Sprintf("Nightly build fix %d", i), "/work/src/widgets"
		}
		return fmt.Sprintf("Routine update %d", i), "/work/src/widgets"
	})
	api := &API{app: a, kind: "web"}
	newestFirst := slices.Clone(ids)
	slices.Reverse(newestFirst)
	var nightly []string
	for _, id := range newestFirst {
		var i int
		fmt.Sscanf(id, "hist-%d", &i)
		if i%4 == 0 {
			nightly = append(nightly, id)
		}
	}

	walk := func(q HistoryQuery) (pages []int, seen []string) {
		for {
			cards, err := api.History(q)
			if err != nil {
				t.Fatalf("%+v: %v", q, err)
			}
			if len(cards) == 0 {
				return pages, seen
			}
			pages = append(pages, len(cards))
			for _, c := range cards {
				seen = append(seen, c.ID)
			}
			q.After = cards[len(cards)-1].ID
		}
	}
	pages, seen := walk(HistoryQuery{Limit: 200})
	if !slices.Equal(seen, newestFirst) || !slices.Equal(pages, []int{200, 200, 200, 200, 200, 100}) {
		t.Errorf("pages %v; saw %d ids, want all %d newest first", pages, len(seen), n)
	}
	pages, seen = walk(HistoryQuery{Text: "nightly", Limit: 100})
	if !slices.Equal(seen, nightly) || !slices.Equal(pages, []int{100, 100, 75}) {
		t.Errorf("search pages %v; saw %d ids, want the %d matches newest first", pages, len(seen), len(nightly))
	}

	if _, err := api.History(HistoryQuery{After: "no such id"}); err == nil {
		t.Error("an invalid id to continue after was accepted")
	}
	if _, err := api.History(HistoryQuery{After: "hist-99999"}); err == nil {
		t.Error("an unknown id to continue after was accepted")
	}
}
