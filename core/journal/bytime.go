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
// of them, byrepo and byagent those of each repository and each agent
// (what History filters by), so that a filter that keeps few records does
// not read the others either. A key is the repository or agent and a NUL
// (nothing for bytime), then the proposal's createdAt in milliseconds,
// complemented so that the newest sorts first, then its id; the value is
// empty. A proposal's repository, agent, createdAt and id never change,
// so only Submit adds keys and only Prune removes them, each in the
// transaction that writes or deletes the record: the indexes cannot
// disagree with the records, whenever the process stops.
var (
	bucketByTime  = []byte("bytime")
	bucketByRepo  = []byte("byrepo")
	bucketByAgent = []byte("byagent")
)

// timeIndex is one of the time indexes and what of a proposal its keys
// begin with.
type timeIndex struct {
	bucket []byte
	prefix func(indexed) []byte
}

// indexed is what the time indexes read of a proposal.
type indexed struct {
	ID        string             `json:"id"`
	Repo      string             `json:"repo"`
	Agent     string             `json:"agent"`
	CreatedAt proposal.Timestamp `json:"createdAt"`
}

func indexedOf(p proposal.Proposal) indexed {
	return indexed{ID: p.ID, Repo: p.Repo, Agent: p.Agent, CreatedAt: p.CreatedAt}
}

// Repository paths and agent names cannot contain NUL.
var timeIndexes = []timeIndex{
	{bucketByTime, func(indexed) []byte { return nil }},
	{bucketByRepo, func(p indexed) []byte { return joinKey(p.Repo, "") }},
	{bucketByAgent, func(p indexed) []byte { return joinKey(p.Agent, "") }},
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
			Proposal indexed `json:"proposal"`
		}
		if err := json.Unmarshal(v, &rec); err != nil {
			return fmt.Errorf("indexing record %s: %w", k, err)
		}
		rec.Proposal.ID = string(k)
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
	ix, prefix := timeIndexes[0], []byte(nil)
	switch at := (indexed{Repo: f.Repo, Agent: f.Agent}); {
	case f.Repo != "":
		ix = timeIndexes[1]
		prefix = ix.prefix(at)
	case f.Agent != "":
		ix = timeIndexes[2]
		prefix = ix.prefix(at)
	}
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
