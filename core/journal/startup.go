package journal

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/sluicehq/sluice/core/proposal"
)

// What the app reads as it starts, kept so that it reads what is due or
// asked for and not every pending record:
//
//   - bucketByExpiry holds each pending proposal under its expiresAt in
//     milliseconds (sign bit flipped, soonest first) and its id, with
//     the agent as value: ExpireDue walks only the keys that are due.
//     Submit adds a key beside the pending bucket's, the transition out of
//     pending removes it, in the same transactions.
//   - bucketStateCount holds how many records are in each state (8 bytes,
//     big endian): Count reads one key instead of walking the state's
//     bystate keys (10,000 of them with 10,000 pending). It moves with the
//     bystate keys, in putIndexed, deleteIndexed and moveState.
//
// A journal without them gets them built whole in Open's transaction.
var (
	bucketByExpiry   = []byte("byexpiry")
	bucketStateCount = []byte("statecount")
)

func expiryKey(expiresAt proposal.Timestamp, id string) []byte {
	return append(binary.BigEndian.AppendUint64(nil, uint64(expiresAt.UnixMilli())^1<<63), id...)
}

func putExpiry(tx *bolt.Tx, p proposal.Proposal) error {
	return tx.Bucket(bucketByExpiry).Put(expiryKey(p.ExpiresAt, p.ID), []byte(p.Agent))
}

func deleteExpiry(tx *bolt.Tx, p proposal.Proposal) error {
	return tx.Bucket(bucketByExpiry).Delete(expiryKey(p.ExpiresAt, p.ID))
}

func addStateCount(tx *bolt.Tx, st proposal.State, delta int) error {
	return addCount(tx.Bucket(bucketStateCount), []byte(st), delta)
}

// indexStartup builds the expiry index from the pending records and the
// state counts from the bystate keys (which indexByTime, run before it,
// has built), for a journal written before they existed.
func indexStartup(tx *bolt.Tx) error {
	if tx.Bucket(bucketByExpiry) == nil {
		if _, err := tx.CreateBucket(bucketByExpiry); err != nil {
			return err
		}
		props := tx.Bucket(bucketProposals)
		err := tx.Bucket(bucketPending).ForEach(func(k, _ []byte) error {
			_, id, ok := bytes.Cut(k, []byte{0})
			if !ok {
				return fmt.Errorf("pending key %q has no id", k)
			}
			v := props.Get(id)
			if v == nil {
				return fmt.Errorf("pending key %q names no record", k)
			}
			var rec struct {
				Proposal struct {
					Agent     string             `json:"agent"`
					ExpiresAt proposal.Timestamp `json:"expiresAt"`
				} `json:"proposal"`
			}
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("indexing the expiry of %s: %w", id, err)
			}
			return putExpiry(tx, proposal.Proposal{ID: string(id), Agent: rec.Proposal.Agent, ExpiresAt: rec.Proposal.ExpiresAt})
		})
		if err != nil {
			return err
		}
	}
	if tx.Bucket(bucketStateCount) == nil {
		if _, err := tx.CreateBucket(bucketStateCount); err != nil {
			return err
		}
		counts := map[proposal.State]int{}
		err := tx.Bucket(byState.bucket).ForEach(func(k, _ []byte) error {
			st, _, ok := bytes.Cut(k, []byte{0})
			if !ok {
				return fmt.Errorf("bystate key %q has no state", k)
			}
			counts[proposal.State(st)]++
			return nil
		})
		if err != nil {
			return err
		}
		for st, n := range counts {
			if err := addStateCount(tx, st, n); err != nil {
				return err
			}
		}
	}
	return nil
}
