package journal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// derivedBuckets computes, from a full scan of the records, what the
// bysession and byrulename buckets must hold, key by key.
func derivedBuckets(tx *bolt.Tx) (sessions, rules map[string]string, err error) {
	sessions, rules = map[string]string{}, map[string]string{}
	sums := map[string]ruleSum{}
	count := func(m map[string]string, k []byte) {
		n := uint64(0)
		if v, ok := m[string(k)]; ok {
			n = uint64(len(v)) // counts are kept as runs of 'x' here
		}
		m[string(k)] = string(bytes.Repeat([]byte("x"), int(n+1)))
	}
	err = tx.Bucket(bucketProposals).ForEach(func(k, v []byte) error {
		var rec Record
		if err := json.Unmarshal(v, &rec); err != nil {
			return err
		}
		if o := rec.Proposal.Origin; o != nil {
			if !o.Leftover {
				count(sessions, sessionCountKey(o.Session))
			}
			if !rec.State.Terminal() {
				sessions[string(sessionOpenKey(o.Session, o.Leftover, rec.Proposal.ID))] = ""
			}
		}
		if r := ruleOf(rec.Decision); r != "" {
			for _, agent := range []string{"", rec.Proposal.Agent} {
				k := "sum:" + string(joinKey(r, agent))
				at := rec.Decision.At.Time
				sum := sums[k]
				sum.count++
				if sum.oldest.IsZero() || at.Before(sum.oldest) {
					sum.oldest = at
				}
				if at.After(sum.newest) {
					sum.newest = at
				}
				sums[k] = sum
				rules[string(append(joinKey("k", r, agent, ""), ruleAtKey(at, rec.Proposal.ID)...))] = ""
			}
		}
		return nil
	})
	for k, sum := range sums {
		rules[k] = sumString(sum)
	}
	return sessions, rules, err
}

func sumString(s ruleSum) string {
	return fmt.Sprintf("%d approvals, %d to %d", s.count, s.oldest.UnixMilli(), s.newest.UnixMilli())
}

// bucketAsDerived reads a bucket as derivedBuckets writes it: a count as
// a run of that many 'x'.
func bucketAsDerived(b *bolt.Bucket) map[string]string {
	out := map[string]string{}
	b.ForEach(func(k, v []byte) error {
		if len(v) == 8 {
			out[string(k)] = string(bytes.Repeat([]byte("x"), readCount(b, k)))
		} else {
			out[string(k)] = string(v)
		}
		return nil
	})
	return out
}

// checkSessionsAndRuleNames reports where the session and rule-name
// indexes and a full scan of the records disagree.
func checkSessionsAndRuleNames(tx *bolt.Tx) error {
	sessions, rules, err := derivedBuckets(tx)
	if err != nil {
		return err
	}
	if got := bucketAsDerived(tx.Bucket(bucketBySession)); !maps.Equal(got, sessions) {
		return fmt.Errorf("session index %q, the records say %q", got, sessions)
	}
	got := bucketAsDerived(tx.Bucket(bucketByRuleName))
	sums := tx.Bucket(bucketRuleSums)
	sums.ForEach(func(k, _ []byte) error {
		rule, agent, _ := bytes.Cut(k, []byte{0})
		got["sum:"+string(k)] = sumString(readRuleSum(sums, string(rule), string(agent)))
		return nil
	})
	if !maps.Equal(got, rules) {
		return fmt.Errorf("rule-name index %q, the records say %q", got, rules)
	}
	return nil
}

// sessionsByScan is Journal.Sessions computed from every record, as the
// Sessions screen did before.
func sessionsByScan(t *testing.T, j *Journal, ids []string) map[string]SessionStanding {
	t.Helper()
	recs, err := j.List(Filter{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]SessionStanding{}
	for _, id := range ids {
		out[id] = SessionStanding{}
	}
	for _, r := range recs {
		o := r.Proposal.Origin
		if o == nil {
			continue
		}
		if _, ok := out[o.Session]; !ok {
			continue
		}
		s := out[o.Session]
		if !o.Leftover {
			s.Proposals++
		}
		if !r.State.Terminal() {
			if o.Leftover {
				s.OpenLeftover = true
			} else {
				s.OpenAgent = true
			}
		}
		out[o.Session] = s
	}
	return out
}

// rulesByScan is Journal.RuleApprovals computed from every record, as the
// Rules screen did before.
func rulesByScan(t *testing.T, j *Journal, qs []RuleQuery) []RuleStanding {
	t.Helper()
	recs, err := j.List(Filter{})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]RuleStanding, len(qs))
	for i, q := range qs {
		for _, r := range recs {
			d := r.Decision
			if ruleOf(d) != q.Rule || q.Agent != "" && r.Proposal.Agent != q.Agent || !q.Since.IsZero() && d.At.Before(q.Since) {
				continue
			}
			out[i].Approved++
			if d.At.After(out[i].Last) {
				out[i].Last = d.At.Time
			}
		}
	}
	return out
}

// TestSessions_IndexMatchesRecords: what Sessions says of each session
// (its agent's proposals, whether a card of its agent's or of what it
// left is open) is what a scan of every record says, after submits,
// decisions, a failure retried (open again), a cancel, a prune, a reopen,
// and after the index is built again at Open for a journal without it
// (one written before it existed, or whose Open stopped before its
// transaction committed); and it reads no record.
func TestSessions_IndexMatchesRecords(t *testing.T) {
	clk := newClock()
	opts := Options{Recorder: &memRecorder{}, Now: clk.Now, PendingCap: 1000, Retention: 48 * time.Hour}
	j, path := testJournal(t, opts)
	ids := []string{"s1", "s2", "s3", "none"}
	submit := func(session string, leftover bool) proposal.Proposal {
		t.Helper()
		p := newProposal(t, clk.Now(), "agent-a")
		if session != "" {
			p.Origin = &proposal.Origin{Session: session, Runtime: "bubblewrap", Leftover: leftover}
			reseal(t, &p)
		}
		if _, _, err := j.Submit(p); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
		return p
	}
	check := func(when string) {
		t.Helper()
		got, err := j.Sessions(ids)
		if err != nil {
			t.Fatal(err)
		}
		if want := sessionsByScan(t, j, ids); !maps.Equal(got, want) {
			t.Errorf("%s: Sessions %+v, a scan of the records %+v", when, got, want)
		}
		if err := j.db.View(checkSessionsAndRuleNames); err != nil {
			t.Errorf("%s: %v", when, err)
		}
	}
	// Old terminal records of s1, pruned later.
	for range 3 {
		p := submit("s1", false)
		if _, err := j.Reject(p.ID, "owner:web", ""); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(72 * time.Hour)
	a := submit("s1", false)
	b := submit("s1", false)
	left := submit("s2", true)
	c := submit("s3", false)
	submit("", false)
	check("submitted")
	if _, err := j.Approve(a.ID, a.Digest, "owner:web", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Fail(a.ID, "executor", Outcome{Code: errcode.StaleBase, Message: "moved"}); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Reject(b.ID, "owner:web", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Cancel(c.ID, "agent-a"); err != nil {
		t.Fatal(err)
	}
	check("decided")
	if got, _ := j.Sessions([]string{"s1", "s3"}); got["s1"].OpenAgent || got["s3"].OpenAgent {
		t.Errorf("after every card of s1 and s3 ended, open: %+v", got)
	}
	if _, err := j.Retry(a.ID, a.Digest, "owner:web", ""); err != nil {
		t.Fatal(err)
	}
	check("retried")
	if got, _ := j.Sessions([]string{"s1"}); !got["s1"].OpenAgent || got["s1"].Proposals != 5 {
		t.Errorf("after a retry s1 is %+v, want 5 proposals and one open", got["s1"])
	}
	if n, err := j.Prune(); err != nil || n != 3 {
		t.Fatalf("pruned %d, %v; want the 3 old records", n, err)
	}
	check("pruned")
	if got, _ := j.Sessions([]string{"s2"}); !got["s2"].OpenLeftover || got["s2"].OpenAgent || got["s2"].Proposals != 0 {
		t.Errorf("s2 is %+v: its one card is a leftover, open", got["s2"])
	}
	_ = left

	// No record is read: Sessions answers beside records that do not
	// decode.
	want, err := j.Sessions(ids)
	if err != nil {
		t.Fatal(err)
	}
	var saved map[string][]byte
	if err := j.db.Update(func(tx *bolt.Tx) error {
		saved = map[string][]byte{}
		b := tx.Bucket(bucketProposals)
		return b.ForEach(func(k, v []byte) error {
			saved[string(k)] = bytes.Clone(v)
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	spoil := func(vals func(k string) []byte) {
		t.Helper()
		if err := j.db.Update(func(tx *bolt.Tx) error {
			for _, k := range slices.Sorted(maps.Keys(saved)) {
				if err := tx.Bucket(bucketProposals).Put([]byte(k), vals(k)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	spoil(func(string) []byte { return []byte("{not json") })
	if got, err := j.Sessions(ids); err != nil || !maps.Equal(got, want) {
		t.Errorf("beside unreadable records: %+v, %v; want %+v", got, err, want)
	}
	spoil(func(k string) []byte { return saved[k] })

	j.Close()
	if j, err = Open(path, opts); err != nil {
		t.Fatal(err)
	}
	check("reopened")
	j.Close()
	dropBuckets(t, path, bucketBySession, bucketByRuleName)
	if j, err = Open(path, opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	check("after the index was built again")
}

// dropBuckets deletes buckets from the closed journal at path, as a
// journal written before they existed lacks them.
func dropBuckets(t *testing.T, path string, names ...[]byte) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		for _, n := range names {
			if err := tx.DeleteBucket(n); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestRuleApprovals_IndexMatchesRecords: how many records each rule
// approved, for any agent or one, since a time, and the newest of them,
// are what a scan of every record says, after approvals by rules and by
// a person, a failure retried (its rule's mark dropped), a prune, a
// reopen and a rebuild at Open; and no record is read.
func TestRuleApprovals_IndexMatchesRecords(t *testing.T) {
	clk := newClock()
	opts := Options{Recorder: &memRecorder{}, Now: clk.Now, PendingCap: 1000, Retention: 48 * time.Hour}
	j, path := testJournal(t, opts)
	start := clk.Now()
	var mid time.Time
	var ruled []proposal.Proposal
	for i := range 30 {
		if i == 15 {
			mid = clk.Now()
		}
		agent := []string{"agent-a", "agent-b"}[i%2]
		p := newProposal(t, clk.Now(), agent)
		if _, _, err := j.Submit(p); err != nil {
			t.Fatal(err)
		}
		switch i % 3 {
		case 0, 1:
			if _, err := j.ApproveAuto(p.ID, p.Digest, fmt.Sprintf("rule-%d", i%4/2)); err != nil {
				t.Fatal(err)
			}
			ruled = append(ruled, p)
		default:
			if _, err := j.Approve(p.ID, p.Digest, "owner:web", ""); err != nil {
				t.Fatal(err)
			}
		}
		if i < 6 {
			if _, err := j.MarkExecuting(p.ID, p.Digest); err != nil {
				t.Fatal(err)
			}
			if _, err := j.Complete(p.ID, "executor", Outcome{}); err != nil {
				t.Fatal(err)
			}
		}
		clk.Advance(time.Second)
		if i == 5 {
			clk.Advance(72 * time.Hour)
		}
	}
	var qs []RuleQuery
	for _, rule := range []string{"rule-0", "rule-1", "rule-none"} {
		for _, agent := range []string{"", "agent-a", "agent-b", "agent-c"} {
			for _, since := range []time.Time{{}, start, mid, clk.Now()} {
				qs = append(qs, RuleQuery{Rule: rule, Agent: agent, Since: since})
			}
		}
	}
	check := func(when string) {
		t.Helper()
		got, err := j.RuleApprovals(qs)
		if err != nil {
			t.Fatal(err)
		}
		want := rulesByScan(t, j, qs)
		for i := range qs {
			if got[i].Approved != want[i].Approved || !got[i].Last.Equal(want[i].Last) {
				t.Errorf("%s: %+v: %d, last %s; a scan says %d, last %s", when, qs[i], got[i].Approved, got[i].Last, want[i].Approved, want[i].Last)
			}
		}
		if err := j.db.View(checkSessionsAndRuleNames); err != nil {
			t.Errorf("%s: %v", when, err)
		}
	}
	check("approved")
	if got, _ := j.RuleApprovals(qs[:1]); got[0].Approved == 0 {
		t.Fatal("the fixture approved nothing by rule-0")
	}
	// The newest approved by a rule fails and is retried by a person.
	last := ruled[len(ruled)-1]
	if _, err := j.Fail(last.ID, "executor", Outcome{Code: errcode.StaleBase, Message: "moved"}); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Retry(last.ID, last.Digest, "owner:web", ""); err != nil {
		t.Fatal(err)
	}
	check("retried")
	if n, err := j.Prune(); err != nil || n != 6 {
		t.Fatalf("pruned %d, %v; want the 6 old records", n, err)
	}
	check("pruned")

	var err error
	j.Close()
	if j, err = Open(path, opts); err != nil {
		t.Fatal(err)
	}
	check("reopened")
	j.Close()
	dropBuckets(t, path, bucketByRuleName)
	if j, err = Open(path, opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	check("after the index was built again")

	// No record is read: the answers stand beside records that do not
	// decode.
	want, err := j.RuleApprovals(qs)
	if err != nil {
		t.Fatal(err)
	}
	saved := map[string][]byte{}
	put := func(val func(k string) []byte) {
		t.Helper()
		if err := j.db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketProposals)
			if len(saved) == 0 {
				b.ForEach(func(k, v []byte) error { saved[string(k)] = bytes.Clone(v); return nil })
			}
			for k := range saved {
				if err := b.Put([]byte(k), val(k)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	put(func(string) []byte { return []byte("{not json") })
	if got, err := j.RuleApprovals(qs); err != nil || !slices.Equal(got, want) {
		t.Errorf("beside unreadable records: %v, %v", got, err)
	}
	put(func(k string) []byte { return saved[k] })
}
