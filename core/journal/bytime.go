package journal

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/sluicehq/sluice/core/proposal"
)

// The time indexes hold every record in List's order, so that a page of
// History reads the records on it and not the whole journal: bytime all
// of them, byrepo and bystate those of each repository and state (what
// History filters by), so that a filter that keeps few records does not
// read the others either. (An agent's filter walks bytime: each index is
// one more page for every submit to write before its fsync.) A key is
// the repository or state and a NUL (nothing for bytime), then the
// proposal's
// createdAt in milliseconds, complemented so that the newest sorts first,
// then its id; the value is empty. A proposal's repository, createdAt and
// id never change: Submit adds its keys and Prune removes
// them, and each transition moves its bystate key, each in the
// transaction that writes or deletes the record: the indexes cannot
// disagree with the records, whenever the process stops.
var (
	bucketByTime  = []byte("bytime")
	bucketByRepo  = []byte("byrepo")
	bucketByState = []byte("bystate")
)

// timeIndex is one of the time indexes and what of a proposal its keys
// begin with.
type timeIndex struct {
	bucket []byte
	prefix func(indexed) []byte
}

// indexed is what the time indexes read of a record: its proposal's
// fields, and its state.
type indexed struct {
	ID        string             `json:"id"`
	Repo      string             `json:"repo"`
	CreatedAt proposal.Timestamp `json:"createdAt"`
	State     proposal.State     `json:"-"`
}

func indexedOf(p proposal.Proposal, st proposal.State) indexed {
	return indexed{ID: p.ID, Repo: p.Repo, CreatedAt: p.CreatedAt, State: st}
}

// Repository paths and states cannot contain NUL.
var timeIndexes = []timeIndex{
	{bucketByTime, func(indexed) []byte { return nil }},
	{bucketByRepo, func(p indexed) []byte { return joinKey(p.Repo, "") }},
	{bucketByState, func(p indexed) []byte { return joinKey(string(p.State), "") }},
}

// byState is the bystate index.
var byState = timeIndexes[2]

// moveState moves p's bystate key from its state to to, in the
// transaction of the transition.
func moveState(tx *bolt.Tx, p indexed, to proposal.State) error {
	b := tx.Bucket(byState.bucket)
	if err := b.Delete(byState.key(p)); err != nil {
		return err
	}
	p.State = to
	return b.Put(byState.key(p), nil)
}

// key is p's key in ix.
func (ix timeIndex) key(p indexed) []byte {
	return append(ix.prefix(p), timeKey(p.CreatedAt, p.ID)...)
}

// timeKey is the bytime key of the proposal with this id and createdAt.
func timeKey(createdAt proposal.Timestamp, id string) []byte {
	// Flipping the sign bit orders int64s as uint64s; complementing
	// puts the newest first.
	t := ^(uint64(createdAt.UnixMilli()) ^ 1<<63)
	return append(binary.BigEndian.AppendUint64(nil, t), id...)
}

// idOfTimeKey is the id a bytime key ends with.
func idOfTimeKey(k []byte) []byte { return k[8:] }

// putIndexed and deleteIndexed add and remove p's keys in every time
// index, in the transaction that writes or deletes its record.
func putIndexed(tx *bolt.Tx, p indexed) error {
	for _, ix := range timeIndexes {
		if err := tx.Bucket(ix.bucket).Put(ix.key(p), nil); err != nil {
			return err
		}
	}
	return nil
}

func deleteIndexed(tx *bolt.Tx, p indexed) error {
	for _, ix := range timeIndexes {
		if err := tx.Bucket(ix.bucket).Delete(ix.key(p)); err != nil {
			return err
		}
	}
	return nil
}

// indexByTime creates each missing time index and fills it from the
// records, for a journal written before the index existed (or one that
// lost it). It runs in Open's transaction: an index appears whole or not
// at all. Only what the indexes need of each record is decoded.
func indexByTime(tx *bolt.Tx) error {
	var missing []timeIndex
	for _, ix := range timeIndexes {
		if tx.Bucket(ix.bucket) == nil {
			if _, err := tx.CreateBucket(ix.bucket); err != nil {
				return err
			}
			missing = append(missing, ix)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return tx.Bucket(bucketProposals).ForEach(func(k, v []byte) error {
		var rec struct {
			State    proposal.State `json:"state"`
			Proposal indexed        `json:"proposal"`
		}
		if err := json.Unmarshal(v, &rec); err != nil {
			return fmt.Errorf("indexing record %s: %w", k, err)
		}
		rec.Proposal.ID, rec.Proposal.State = string(k), rec.State
		for _, ix := range missing {
			if err := tx.Bucket(ix.bucket).Put(ix.key(rec.Proposal), nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// listByTime calls consider with each record f could keep, in List's
// order, starting after the record after (nil: from the newest), until
// consider says stop. It reads the narrowest time index f allows.
func (j *Journal) listByTime(tx *bolt.Tx, f Filter, after *Record, consider func(k, v []byte) (stop bool, err error)) error {
	ix := timeIndexes[0]
	at := indexed{Repo: f.Repo}
	switch {
	case f.Repo != "":
		ix = timeIndexes[1]
	case len(f.States) == 1:
		ix, at.State = byState, f.States[0]
	}
	prefix := ix.prefix(at)
	props := tx.Bucket(bucketProposals)
	c := tx.Bucket(ix.bucket).Cursor()
	k, _ := c.Seek(prefix)
	if after != nil {
		from := append(bytes.Clone(prefix), timeKey(after.Proposal.CreatedAt, after.Proposal.ID)...)
		k, _ = c.Seek(from)
		if bytes.Equal(k, from) {
			k, _ = c.Next()
		}
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		id := idOfTimeKey(k[len(prefix):])
		v := props.Get(id)
		if v == nil {
			return fmt.Errorf("time index %s names %s, which is missing", ix.bucket, id)
		}
		stop, err := consider(id, v)
		if stop || err != nil {
			return err
		}
	}
	return nil
}
