package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/sluicehq/sluice/core/proposal"
)

// bucketByRule holds each record whose decision is an approval by a
// policy rule, keyed by the decision's time (complemented, newest first)
// and the id, with the rule's name as value: the feed of
// what rules approved (shown beside the pending list as the app starts)
// reads its page here instead of decoding every record to find them. The
// transition that sets or replaces a record's decision moves its key in
// the same transaction, and Prune removes it; a journal without the
// bucket gets it built whole in Open's transaction.
var bucketByRule = []byte("byrule")

// ruleOf is the rule that approved a record with decision d, "" when no
// rule did.
func ruleOf(d *Decision) string {
	if d == nil || !d.Auto || !d.Approved {
		return ""
	}
	return strings.TrimPrefix(d.By, "policy:")
}

// moveRule updates p's key after its decision went from was to is.
func moveRule(tx *bolt.Tx, p proposal.Proposal, was, is *Decision) error {
	from, to := ruleOf(was), ruleOf(is)
	if from == to {
		return nil
	}
	b := tx.Bucket(bucketByRule)
	if from != "" {
		if err := b.Delete(timeKey(was.At, p.ID)); err != nil {
			return err
		}
	}
	if to == "" {
		return nil
	}
	return b.Put(timeKey(is.At, p.ID), []byte(to))
}

// indexRules creates the rule bucket and fills it from the records, for a
// journal written before it existed. It runs in Open's transaction.
func indexRules(tx *bolt.Tx) error {
	if tx.Bucket(bucketByRule) != nil {
		return nil
	}
	if _, err := tx.CreateBucket(bucketByRule); err != nil {
		return err
	}
	return tx.Bucket(bucketProposals).ForEach(func(k, v []byte) error {
		var rec struct {
			Decision *Decision `json:"decision"`
		}
		if err := json.Unmarshal(v, &rec); err != nil {
			return fmt.Errorf("indexing the decision of %s: %w", k, err)
		}
		return moveRule(tx, proposal.Proposal{ID: string(k)}, nil, rec.Decision)
	})
}

// ApprovedByRules returns the records a policy rule approved, the newest
// decisions first, at most limit of them, reading only them.
func (j *Journal) ApprovedByRules(limit int) ([]Record, error) {
	var out []Record
	err := j.db.View(func(tx *bolt.Tx) error {
		props := tx.Bucket(bucketProposals)
		c := tx.Bucket(bucketByRule).Cursor()
		for k, _ := c.First(); k != nil && len(out) < limit; k, _ = c.Next() {
			id := idOfTimeKey(k)
			v := props.Get(id)
			if v == nil {
				return fmt.Errorf("rule index names %s, which is missing", id)
			}
			rec, err := j.cache.decodeRecord(string(id), v)
			if err != nil {
				return err
			}
			out = append(out, rec)
		}
		return nil
	})
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return nil, ErrClosed
	}
	if err != nil {
		return nil, fmt.Errorf("journal: approved by rules: %w", err)
	}
	return out, nil
}
