package journal

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/sluicehq/sluice/core/proposal"
)

// bucketByRuleName holds, per policy rule, the approvals it made, so that
// the Rules screen reads a value per rule instead of every record: "k"
// NUL rule NUL agent NUL time id → nothing, one key per approval under
// its agent and one under the empty agent (for any agent), the time being
// the decision's in milliseconds (sign bit flipped, oldest first). Beside
// it, bucketRuleSums holds per rule NUL agent how many keys there are and
// the oldest and newest decision among them (three big-endian uint64).
// The transition that sets or replaces a decision moves the keys and
// sums in the same transaction, Prune removes them; a journal without
// either bucket gets both built whole in Open's transaction. Rule names
// and agent names cannot contain NUL, and an agent's name is never empty.
var bucketByRuleName = []byte("byrulename")

// bucketRuleSums is apart from bucketByRuleName's keys so that the Rules
// screen reads one value a rule from a bucket of a page or two, not from a
// tree as deep as the number of approvals makes it.
var bucketRuleSums = []byte("rulesums")

// RuleQuery asks how many records a rule approved.
type RuleQuery struct {
	Rule string
	// Agent counts only that agent's proposals; empty counts every
	// agent's.
	Agent string
	// Since counts only decisions at or after it (a rule saved again
	// under a name that was used before starts from zero); zero counts all.
	Since time.Time
}

// RuleStanding is what a rule approved.
type RuleStanding struct {
	Approved int
	// Last is the newest of those decisions, zero with none.
	Last time.Time
}

// ruleAtKey orders decisions oldest first.
func ruleAtKey(at time.Time, id string) []byte {
	return append(binary.BigEndian.AppendUint64(nil, uint64(at.UnixMilli())^1<<63), id...)
}

func ruleAtOf(k []byte) time.Time {
	return time.UnixMilli(int64(binary.BigEndian.Uint64(k[:8]) ^ 1<<63))
}

// moveRuleName updates the keys of p (its id and agent) after its
// decision went from was to is.
func moveRuleName(tx *bolt.Tx, p proposal.Proposal, was, is *Decision) error {
	from, to := ruleOf(was), ruleOf(is)
	if from == to && (from == "" || was.At.Equal(is.At.Time)) {
		return nil
	}
	b := tx.Bucket(bucketByRuleName)
	for _, agent := range []string{"", p.Agent} {
		if from != "" {
			if err := b.Delete(append(joinKey("k", from, agent, ""), ruleAtKey(was.At.Time, p.ID)...)); err != nil {
				return err
			}
			if err := sumRule(tx, from, agent, -1); err != nil {
				return err
			}
		}
		if to != "" {
			if err := b.Put(append(joinKey("k", to, agent, ""), ruleAtKey(is.At.Time, p.ID)...), nil); err != nil {
				return err
			}
			if err := sumRule(tx, to, agent, 1); err != nil {
				return err
			}
		}
	}
	return nil
}

// ruleSum is a rule's value in bucketRuleSums.
type ruleSum struct {
	count          int
	oldest, newest time.Time
}

func readRuleSum(sums *bolt.Bucket, rule, agent string) ruleSum {
	v := sums.Get(joinKey(rule, agent))
	if len(v) != 24 {
		return ruleSum{}
	}
	return ruleSum{count: int(binary.BigEndian.Uint64(v)), oldest: ruleAtOf(v[8:16]), newest: ruleAtOf(v[16:24])}
}

// sumRule adds delta to the count of rule and agent and takes the oldest
// and newest decision again from its keys (two seeks), after a key was
// added or removed.
func sumRule(tx *bolt.Tx, rule, agent string, delta int) error {
	b, sums := tx.Bucket(bucketByRuleName), tx.Bucket(bucketRuleSums)
	k := joinKey(rule, agent)
	sum := readRuleSum(sums, rule, agent)
	sum.count += delta
	if sum.count < 0 {
		return fmt.Errorf("count %q would go below zero", k)
	}
	if sum.count == 0 {
		return sums.Delete(k)
	}
	prefix := joinKey("k", rule, agent, "")
	c := b.Cursor()
	first, _ := c.Seek(prefix)
	last := lastWithPrefix(c, prefix)
	if first == nil || !bytes.HasPrefix(first, prefix) || last == nil {
		return fmt.Errorf("rule %q counts %d approvals and has no key", rule, sum.count)
	}
	v := binary.BigEndian.AppendUint64(nil, uint64(sum.count))
	v = append(v, first[len(prefix):len(prefix)+8]...)
	v = append(v, last[len(prefix):len(prefix)+8]...)
	return sums.Put(k, v)
}

// lastWithPrefix is the last key of c's bucket that begins with prefix
// (which ends with a NUL), or nil.
func lastWithPrefix(c *bolt.Cursor, prefix []byte) []byte {
	end := bytes.Clone(prefix)
	end[len(end)-1]++ // the first key past the prefix
	k, _ := c.Seek(end)
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	if k == nil || !bytes.HasPrefix(k, prefix) {
		return nil
	}
	return k
}

// indexRuleNames creates the bucket and fills it from the records, for a
// journal written before it existed. It runs in Open's transaction.
func indexRuleNames(tx *bolt.Tx) error {
	if tx.Bucket(bucketByRuleName) != nil && tx.Bucket(bucketRuleSums) != nil {
		return nil
	}
	// Both are built again together.
	for _, name := range [][]byte{bucketByRuleName, bucketRuleSums} {
		if tx.Bucket(name) != nil {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return err
		}
	}
	return tx.Bucket(bucketProposals).ForEach(func(k, v []byte) error {
		var rec struct {
			Decision *Decision `json:"decision"`
			Proposal struct {
				Agent string `json:"agent"`
			} `json:"proposal"`
		}
		if err := json.Unmarshal(v, &rec); err != nil {
			return fmt.Errorf("indexing the decision of %s: %w", k, err)
		}
		return moveRuleName(tx, proposal.Proposal{ID: string(k), Agent: rec.Proposal.Agent}, nil, rec.Decision)
	})
}

// RuleApprovals answers each query from the rule's sum: one read,
// unless decisions older than Since are kept (a rule of the same name
// approved before this one was saved), which are walked; no record is
// read.
func (j *Journal) RuleApprovals(qs []RuleQuery) ([]RuleStanding, error) {
	out := make([]RuleStanding, len(qs))
	err := j.db.View(func(tx *bolt.Tx) error {
		b, sums := tx.Bucket(bucketByRuleName), tx.Bucket(bucketRuleSums)
		for i, q := range qs {
			sum := readRuleSum(sums, q.Rule, q.Agent)
			n := sum.count
			if n > 0 && !q.Since.IsZero() && sum.oldest.Before(q.Since) {
				prefix := joinKey("k", q.Rule, q.Agent, "")
				c := b.Cursor()
				for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && ruleAtOf(k[len(prefix):]).Before(q.Since); k, _ = c.Next() {
					n--
				}
			}
			if n > 0 {
				out[i] = RuleStanding{Approved: n, Last: sum.newest}
			}
		}
		return nil
	})
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return nil, ErrClosed
	}
	if err != nil {
		return nil, fmt.Errorf("journal: rule approvals: %w", err)
	}
	return out, nil
}
