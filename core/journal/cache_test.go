package journal

import (
	"bytes"
	"fmt"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/sluicehq/sluice/core/proposal"
)

// A proposal read again decodes through the cache, but only while the
// stored bytes are the ones it decoded: a record rewritten on disk behind
// the journal's back is read as it is now.
func TestProposalCache_RewrittenRecordIsDecodedAfresh(t *testing.T) {
	j, _, clk, _ := setup(t)
	p := newProposal(t, clk.Now(), "agent-a")
	if _, _, err := j.Submit(p); err != nil {
		t.Fatal(err)
	}
	first, err := j.Get(p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := j.cache.m[p.ID]; !ok {
		t.Fatalf("the decoded proposal was not cached")
	}
	again, err := j.Get(p.ID)
	if err != nil || again.Proposal.Reason != first.Proposal.Reason || again.Proposal.Digest != p.Digest {
		t.Fatalf("second read %+v, %v", again.Proposal, err)
	}
	// A hit hands back the decoded proposal itself: the same arguments.
	if again.Proposal.Args != first.Proposal.Args {
		t.Fatalf("the second read decoded the proposal again")
	}
	// Rewrite the stored reason without going through the journal.
	err = j.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketProposals)
		v := bytes.Clone(b.Get([]byte(p.ID)))
		old := fmt.Sprintf("%q", p.Reason)
		if !bytes.Contains(v, []byte(old)) {
			return fmt.Errorf("the stored record lacks the reason %s", old)
		}
		return b.Put([]byte(p.ID), bytes.Replace(v, []byte(old), []byte(`"rewritten on disk"`), 1))
	})
	if err != nil {
		t.Fatal(err)
	}
	now, err := j.Get(p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if now.Proposal.Reason != "rewritten on disk" || now.Proposal.Args == first.Proposal.Args {
		t.Fatalf("reason %q: the cache hid a record changed on disk", now.Proposal.Reason)
	}
	if err := now.Proposal.VerifyDigest(); err == nil {
		t.Fatalf("a rewritten proposal still verifies against its digest")
	}
}

// The cache stays within its bounds, dropping the oldest first.
func TestProposalCache_Bounded(t *testing.T) {
	var c proposalCache
	for i := range cacheEntries + 10 {
		c.put(fmt.Sprintf("p%d", i), []byte(fmt.Sprintf(`{"n":%d}`, i)), proposal.Proposal{ID: fmt.Sprintf("p%d", i)})
	}
	if len(c.m) != cacheEntries || len(c.order) != cacheEntries {
		t.Fatalf("%d entries, %d in order: want %d", len(c.m), len(c.order), cacheEntries)
	}
	if _, ok := c.get("p0", []byte(`{"n":0}`)); ok {
		t.Errorf("the oldest entry survived")
	}
	if p, ok := c.get(fmt.Sprintf("p%d", cacheEntries+9), []byte(fmt.Sprintf(`{"n":%d}`, cacheEntries+9))); !ok || p.ID != fmt.Sprintf("p%d", cacheEntries+9) {
		t.Errorf("the newest entry is missing")
	}
	big := bytes.Repeat([]byte("x"), cacheBytes/8)
	for i := range 10 {
		c.put(fmt.Sprintf("big%d", i), big, proposal.Proposal{})
	}
	if c.bytes > cacheBytes {
		t.Errorf("%d bytes cached, over the bound %d", c.bytes, cacheBytes)
	}
	if _, ok := c.get("huge", nil); ok {
		t.Errorf("an entry that was never put was found")
	}
}
