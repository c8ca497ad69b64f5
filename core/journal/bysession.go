package journal

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/sluicehq/sluice/core/proposal"
)

// bucketBySession holds what the Sessions screen shows of each confined
// session's proposals, so that it reads a few keys per session instead
// of every record: "n" NUL session → how many of its agent's proposals
// the journal holds (8 bytes, big endian; the leftover cards Sluice made
// are not counted), and "o" NUL session NUL kind NUL id → nothing, for
// each of its records that is not terminal (kind "a" for its agent's
// cards, "l" for a leftover card). Submit adds a record's keys, each
// transition between a terminal and an open state moves its "o" key, and
// Prune removes them, each in the transaction that writes or deletes the
// record; a journal without the bucket gets it built whole in Open's
// transaction. Session ids cannot contain NUL.
var bucketBySession = []byte("bysession")

// SessionStanding is what the journal holds of one confined session's
// proposals.
type SessionStanding struct {
	// Proposals is how many of its agent's proposals the journal holds
	// (past retention they are pruned and no longer counted).
	Proposals int
	// OpenAgent: a card of its agent's is not terminal (pending, approved,
	// executing or waiting for reconciliation).
	OpenAgent bool
	// OpenLeftover: the card of what it left is not terminal.
	OpenLeftover bool
}

func sessionCountKey(session string) []byte { return joinKey("n", session) }

func sessionOpenKey(session string, leftover bool, id string) []byte {
	kind := "a"
	if leftover {
		kind = "l"
	}
	return joinKey("o", session, kind, id)
}

// addCount adds delta to the count kept at k (absent: 0); a count that
// reaches 0 is removed.
func addCount(b *bolt.Bucket, k []byte, delta int) error {
	n := int64(0)
	if v := b.Get(k); len(v) == 8 {
		n = int64(binary.BigEndian.Uint64(v))
	}
	n += int64(delta)
	if n < 0 {
		return fmt.Errorf("count %q would go below zero", k)
	}
	if n == 0 {
		return b.Delete(k)
	}
	return b.Put(k, binary.BigEndian.AppendUint64(nil, uint64(n)))
}

func readCount(b *bolt.Bucket, k []byte) int {
	if v := b.Get(k); len(v) == 8 {
		return int(binary.BigEndian.Uint64(v))
	}
	return 0
}

// putSession adds the keys of record id of origin o in state st.
func putSession(tx *bolt.Tx, id string, o *proposal.Origin, st proposal.State) error {
	if o == nil || o.Session == "" {
		return nil
	}
	b := tx.Bucket(bucketBySession)
	if !o.Leftover {
		if err := addCount(b, sessionCountKey(o.Session), 1); err != nil {
			return err
		}
	}
	if st.Terminal() {
		return nil
	}
	return b.Put(sessionOpenKey(o.Session, o.Leftover, id), nil)
}

// deleteSession removes what putSession added.
func deleteSession(tx *bolt.Tx, id string, o *proposal.Origin) error {
	if o == nil || o.Session == "" {
		return nil
	}
	b := tx.Bucket(bucketBySession)
	if !o.Leftover {
		if err := addCount(b, sessionCountKey(o.Session), -1); err != nil {
			return err
		}
	}
	return b.Delete(sessionOpenKey(o.Session, o.Leftover, id))
}

// moveSession moves record id's "o" key after a transition from from to
// to.
func moveSession(tx *bolt.Tx, id string, o *proposal.Origin, from, to proposal.State) error {
	if o == nil || o.Session == "" || from.Terminal() == to.Terminal() {
		return nil
	}
	b := tx.Bucket(bucketBySession)
	k := sessionOpenKey(o.Session, o.Leftover, id)
	if to.Terminal() {
		return b.Delete(k)
	}
	return b.Put(k, nil)
}

// indexSessions creates the session bucket and fills it from the
// records, for a journal written before it existed. It runs in Open's
// transaction: the index appears whole or not at all.
func indexSessions(tx *bolt.Tx) error {
	if tx.Bucket(bucketBySession) != nil {
		return nil
	}
	if _, err := tx.CreateBucket(bucketBySession); err != nil {
		return err
	}
	return tx.Bucket(bucketProposals).ForEach(func(k, v []byte) error {
		var rec struct {
			State    proposal.State `json:"state"`
			Proposal struct {
				Origin *proposal.Origin `json:"origin"`
			} `json:"proposal"`
		}
		if err := json.Unmarshal(v, &rec); err != nil {
			return fmt.Errorf("indexing the session of %s: %w", k, err)
		}
		return putSession(tx, string(k), rec.Proposal.Origin, rec.State)
	})
}

// Sessions returns what the journal holds of each of these confined
// sessions' proposals, reading a count and at most two keys per session,
// whatever the number of records.
func (j *Journal) Sessions(ids []string) (map[string]SessionStanding, error) {
	out := make(map[string]SessionStanding, len(ids))
	err := j.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketBySession)
		c := b.Cursor()
		open := func(prefix []byte) bool {
			k, _ := c.Seek(prefix)
			return k != nil && bytes.HasPrefix(k, prefix)
		}
		for _, id := range ids {
			out[id] = SessionStanding{
				Proposals:    readCount(b, sessionCountKey(id)),
				OpenAgent:    open(joinKey("o", id, "a", "")),
				OpenLeftover: open(joinKey("o", id, "l", "")),
			}
		}
		return nil
	})
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return nil, ErrClosed
	}
	if err != nil {
		return nil, fmt.Errorf("journal: sessions: %w", err)
	}
	return out, nil
}
