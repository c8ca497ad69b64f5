package journal

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sluicehq/sluice/core/proposal"
)

// pairwiseCollisions is what Collisions means, computed the slow way:
// every other pending proposal of p's repository compared path by path.
func pairwiseCollisions(t *testing.T, j *Journal, p proposal.Proposal) []Collision {
	t.Helper()
	recs, err := j.List(Filter{States: []proposal.State{proposal.Pending}, Repo: p.Repo})
	if err != nil {
		t.Fatal(err)
	}
	mine, _ := p.FilesTouched()
	var out []Collision
	for _, r := range recs {
		if r.Proposal.ID == p.ID {
			continue
		}
		theirs, _ := r.Proposal.FilesTouched()
		var files []string
		for _, a := range mine {
			for _, b := range theirs {
				if proposal.PathsOverlap(a, b) {
					files = append(files, a)
					break
				}
			}
		}
		if len(files) > 0 {
			out = append(out, Collision{ProposalID: r.Proposal.ID, Agent: r.Proposal.Agent, Files: files})
		}
	}
	return out
}

// TestCollisions_IndexAgreesWithPairs: collisions found through the
// pending paths index are those of comparing every pair, for files,
// directories above and below them and the whole tree, in two
// repositories; after decisions; and after the index is
// rebuilt at Open for a journal without it.
func TestCollisions_IndexAgreesWithPairs(t *testing.T) {
	clk := newClock()
	j, path := testJournal(t, Options{Recorder: &memRecorder{}, Now: clk.Now, PendingCap: 100})
	sets := [][]string{
		{"src/a.go"}, {"src"}, {"src/a.go", "docs/x.md"}, {"srcx/a.go"}, {"src/sub/b.go"},
		{"docs"}, {"README.md"}, {"src/sub/b.go", "src/a.go"}, {"docs/x.md", "src/sub"},
	}
	var ps []proposal.Proposal
	for i, paths := range sets {
		for _, repo := range []string{"/work/repo", "/work/other"} {
			p := newProposal(t, clk.Now(), fmt.Sprintf("agent-%d", i%3), paths...)
			p.Repo = repo
			reseal(t, &p)
			if _, _, err := j.Submit(p); err != nil {
				t.Fatal(err)
			}
			ps = append(ps, p)
			clk.Advance(time.Millisecond)
		}
	}
	check := func(when string) {
		t.Helper()
		for _, p := range ps {
			got, err := j.Collisions(p)
			if err != nil {
				t.Fatal(err)
			}
			want := pairwiseCollisions(t, j, p)
			byID := func(a, b Collision) int { return strings.Compare(a.ProposalID, b.ProposalID) }
			slices.SortFunc(got, byID)
			slices.SortFunc(want, byID)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %s %v: %+v, want %+v", when, p.Repo, p.Args.(*proposal.CommitArgs).Paths, got, want)
			}
		}
	}
	check("all pending")
	for _, p := range ps[:4] {
		if _, err := j.Reject(p.ID, "owner:web", ""); err != nil {
			t.Fatal(err)
		}
	}
	check("after decisions")

	// A journal from before the index: it is built at Open.
	j.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketPendingPaths) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if j, err = Open(path, Options{Recorder: &memRecorder{}, Now: clk.Now, PendingCap: 100}); err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	check("after the index was rebuilt")
}

// TestCollisions_ReadNoOtherRecord: a card's collisions are found without
// reading the other pending proposals: one that cannot be decoded does
// not matter.
func TestCollisions_ReadNoOtherRecord(t *testing.T) {
	clk := newClock()
	j, _ := testJournal(t, Options{Recorder: &memRecorder{}, Now: clk.Now, PendingCap: 100})
	a := newProposal(t, clk.Now(), "agent-a", "src/a.go")
	b := newProposal(t, clk.Now(), "agent-b", "src")
	c := newProposal(t, clk.Now(), "agent-c", "docs/x.md")
	for _, p := range []proposal.Proposal{a, b, c} {
		if _, _, err := j.Submit(p); err != nil {
			t.Fatal(err)
		}
	}
	var saved []byte
	spoil := func(v []byte) {
		err := j.db.Update(func(tx *bolt.Tx) error {
			props := tx.Bucket(bucketProposals)
			if saved == nil {
				saved = append([]byte(nil), props.Get([]byte(c.ID))...)
			}
			return props.Put([]byte(c.ID), v)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	spoil([]byte("{not json"))
	got, err := j.Collisions(a)
	spoil(saved)
	if err != nil || len(got) != 1 || got[0].ProposalID != b.ID || got[0].Agent != "agent-b" {
		t.Fatalf("collisions of a: %+v %v", got, err)
	}
}
