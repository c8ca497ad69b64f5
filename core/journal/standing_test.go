package journal

import (
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/proposal"
)

// TestRepos_Standings: Repos names each repository with records once,
// and Standings gives the state and last change of the ids that have a
// record, leaving out the others.
func TestRepos_Standings(t *testing.T) {
	clk := newClock()
	j, _ := testJournal(t, Options{Recorder: &memRecorder{}, Now: clk.Now, PendingCap: 100})
	var ids []string
	var rejectedAt time.Time
	for i, repo := range []string{"/work/b", "/work/a", "/work/b", "/work/a/x", "/work/c"} {
		p := newProposal(t, clk.Now(), "agent-a")
		p.Repo = repo
		reseal(t, &p)
		if _, _, err := j.Submit(p); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
		if i == 1 {
			rejectedAt = clk.Now()
			if _, err := j.Reject(p.ID, "owner:web", ""); err != nil {
				t.Fatal(err)
			}
		}
		ids = append(ids, p.ID)
	}
	repos, err := j.Repos()
	if err != nil || !slices.Equal(repos, []string{"/work/a", "/work/a/x", "/work/b", "/work/c"}) {
		t.Fatalf("Repos: %q %v", repos, err)
	}
	st, err := j.Standings(append(ids, "p-none"))
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != len(ids) {
		t.Fatalf("standings of %d ids, want %d: %+v", len(st), len(ids), st)
	}
	if s := st[ids[1]]; s.State != proposal.Rejected || !s.UpdatedAt.Equal(rejectedAt) {
		t.Errorf("the rejected one: %+v, want rejected at %s", s, rejectedAt)
	}
	if s := st[ids[0]]; s.State != proposal.Pending {
		t.Errorf("the first: %+v, want pending", s)
	}
}
