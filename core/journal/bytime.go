package journal

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/sluicehq/sluice/core/proposal"
)

// bucketByTime indexes every record in List's order, so that a page of
// History reads the records on it and not the whole journal. A key is the
// proposal's createdAt in milliseconds, complemented so that the newest
// sorts first, followed by its id; the value is empty. A proposal's
// createdAt and id never change, so only Submit adds a key and only Prune
// removes one, each in the transaction that writes or deletes the record:
// the index cannot disagree with the records, whenever the process stops.
var bucketByTime = []byte("bytime")

// timeKey is the index key of the proposal with this id and createdAt.
func timeKey(createdAt proposal.Timestamp, id string) []byte {
	// Flipping the sign bit orders int64s as uint64s; complementing
	// puts the newest first.
	t := ^(uint64(createdAt.UnixMilli()) ^ 1<<63)
	return append(binary.BigEndian.AppendUint64(nil, t), id...)
}

// idOfTimeKey is the id a time index key ends with.
func idOfTimeKey(k []byte) []byte { return k[8:] }

// indexByTime creates the time index and fills it from the records, for
// a journal written before the index existed (or one whose index was
// lost). It runs in Open's transaction: the index appears whole or not at
// all. Only the id and createdAt of each record are decoded.
func indexByTime(tx *bolt.Tx) error {
	if tx.Bucket(bucketByTime) != nil {
		return nil
	}
	idx, err := tx.CreateBucket(bucketByTime)
	if err != nil {
		return err
	}
	var rec struct {
		Proposal struct {
			ID        string             `json:"id"`
			CreatedAt proposal.Timestamp `json:"createdAt"`
		} `json:"proposal"`
	}
	return tx.Bucket(bucketProposals).ForEach(func(k, v []byte) error {
		rec.Proposal.ID, rec.Proposal.CreatedAt = "", proposal.Timestamp{}
		if err := json.Unmarshal(v, &rec); err != nil {
			return fmt.Errorf("indexing record %s: %w", k, err)
		}
		return idx.Put(timeKey(rec.Proposal.CreatedAt, string(k)), nil)
	})
}

// listByTime calls consider with each record in List's order, starting
// after the record after (nil: from the newest), until consider says stop.
func (j *Journal) listByTime(tx *bolt.Tx, after *Record, consider func(k, v []byte) (stop bool, err error)) error {
	props := tx.Bucket(bucketProposals)
	c := tx.Bucket(bucketByTime).Cursor()
	k, _ := c.First()
	if after != nil {
		from := timeKey(after.Proposal.CreatedAt, after.Proposal.ID)
		k, _ = c.Seek(from)
		if bytes.Equal(k, from) {
			k, _ = c.Next()
		}
	}
	for ; k != nil; k, _ = c.Next() {
		id := idOfTimeKey(k)
		v := props.Get(id)
		if v == nil {
			return fmt.Errorf("time index names %s, which is missing", id)
		}
		stop, err := consider(id, v)
		if stop || err != nil {
			return err
		}
	}
	return nil
}
