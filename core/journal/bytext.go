package journal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/sluicehq/sluice/core/proposal"
)

// bucketByText holds, under each record's bytime key, the words History's
// search looks in: the proposal's reason, agent, repository name,
// operation and id, in lower case (SearchText). A search walks these
// short values instead of decoding every record: only a record whose
// words contain the text is read. Submit adds the value and Prune
// removes it, in the transaction that writes or deletes the record (none
// of these fields ever changes); a journal without the bucket gets it
// built whole in Open's transaction.
var bucketByText = []byte("bytext")

// SearchText is what Filter.Text is looked for in: the words a History
// row shows of p, in lower case, as written.
func SearchText(p proposal.Proposal) string {
	return strings.ToLower(p.Reason + " " + p.Agent + " " + filepath.Base(p.Repo) + " " + string(p.Op) + " " + p.ID)
}

func putText(tx *bolt.Tx, p proposal.Proposal) error {
	return tx.Bucket(bucketByText).Put(timeKey(p.CreatedAt, p.ID), []byte(SearchText(p)))
}

func deleteText(tx *bolt.Tx, createdAt proposal.Timestamp, id string) error {
	return tx.Bucket(bucketByText).Delete(timeKey(createdAt, id))
}

// indexText creates the text bucket and fills it from the records, for a
// journal written before it existed. It runs in Open's transaction.
func indexText(tx *bolt.Tx) error {
	if tx.Bucket(bucketByText) != nil {
		return nil
	}
	if _, err := tx.CreateBucket(bucketByText); err != nil {
		return err
	}
	return tx.Bucket(bucketProposals).ForEach(func(k, v []byte) error {
		var rec struct {
			Proposal struct {
				ID        string             `json:"id"`
				Repo      string             `json:"repo"`
				Agent     string             `json:"agent"`
				Reason    string             `json:"reason"`
				Op        proposal.Op        `json:"op"`
				CreatedAt proposal.Timestamp `json:"createdAt"`
			} `json:"proposal"`
		}
		if err := json.Unmarshal(v, &rec); err != nil {
			return fmt.Errorf("indexing the words of %s: %w", k, err)
		}
		q := rec.Proposal
		return putText(tx, proposal.Proposal{ID: string(k), Repo: q.Repo, Agent: q.Agent, Reason: q.Reason, Op: q.Op, CreatedAt: q.CreatedAt})
	})
}

// hasText reports whether the words under time key tk in words (the
// text bucket) contain text (always, when text is empty).
func hasText(words *bolt.Bucket, tk, text []byte) bool {
	return len(text) == 0 || bytes.Contains(words.Get(tk), text)
}
