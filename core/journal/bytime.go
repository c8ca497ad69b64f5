package journal

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"time"

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
	if err := addStateCount(tx, p.State, -1); err != nil {
		return err
	}
	p.State = to
	if err := addStateCount(tx, to, 1); err != nil {
		return err
	}
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

// createdOfTimeKey is the createdAt (to the millisecond) a bytime key
// begins with.
func createdOfTimeKey(k []byte) time.Time {
	return time.UnixMilli(int64(^binary.BigEndian.Uint64(k[:8]) ^ 1<<63))
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
	return addStateCount(tx, p.State, 1)
}

func deleteIndexed(tx *bolt.Tx, p indexed) error {
	for _, ix := range timeIndexes {
		if err := tx.Bucket(ix.bucket).Delete(ix.key(p)); err != nil {
			return err
		}
	}
	return addStateCount(tx, p.State, -1)
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
// order (the reverse with f.Oldest), starting after the record after
// (nil: from the first), until consider says stop. It reads the
// narrowest time index f allows: the bystate index of each state f keeps
// when they are all open states (few records, whatever the history) or
// when f names no repository, else byrepo for a repository, else bytime.
// The keys of several states are merged in order, so that a page reads
// the records on it and no others.
func (j *Journal) listByTime(tx *bolt.Tx, f Filter, after *Record, consider func(k, v []byte) (stop bool, err error)) error {
	open := len(f.States) > 0
	for _, s := range f.States {
		open = open && !s.Terminal()
	}
	var prefixes [][]byte
	ix := timeIndexes[0]
	switch {
	case len(f.States) > 0 && (open || f.Repo == ""):
		ix = byState
		for _, s := range slices.Compact(slices.Sorted(slices.Values(f.States))) {
			prefixes = append(prefixes, ix.prefix(indexed{State: s}))
		}
	case f.Repo != "":
		ix = timeIndexes[1]
		prefixes = [][]byte{ix.prefix(indexed{Repo: f.Repo})}
	default:
		prefixes = [][]byte{nil}
	}
	var from []byte
	if after != nil {
		from = timeKey(after.Proposal.CreatedAt, after.Proposal.ID)
	}
	b := tx.Bucket(ix.bucket)
	walks := make([]*indexWalk, 0, len(prefixes))
	for _, p := range prefixes {
		walks = append(walks, newIndexWalk(b, p, from, f.Oldest))
	}
	props, words, text := tx.Bucket(bucketProposals), tx.Bucket(bucketByText), []byte(f.Text)
	for {
		// The walk whose key comes first in the order asked for.
		var w *indexWalk
		for _, x := range walks {
			if x.k == nil {
				continue
			}
			if w == nil || (bytes.Compare(x.suffix(), w.suffix()) < 0) != f.Oldest {
				w = x
			}
		}
		if w == nil {
			return nil
		}
		if !hasText(words, w.suffix(), text) {
			w.next()
			continue
		}
		id := idOfTimeKey(w.suffix())
		v := props.Get(id)
		if v == nil {
			return fmt.Errorf("time index %s names %s, which is missing", ix.bucket, id)
		}
		stop, err := consider(id, v)
		if stop || err != nil {
			return err
		}
		w.next()
	}
}

// indexWalk walks the keys of a time index that begin with prefix,
// forward (newest first) or back (oldest first), from after the time
// key from (nil: from the first).
type indexWalk struct {
	c      *bolt.Cursor
	prefix []byte
	back   bool
	k      []byte // nil once the walk is over
}

func newIndexWalk(b *bolt.Bucket, prefix, from []byte, back bool) *indexWalk {
	w := &indexWalk{c: b.Cursor(), prefix: prefix, back: back}
	switch {
	case !back && from == nil:
		w.k, _ = w.c.Seek(prefix)
	case !back:
		at := append(bytes.Clone(prefix), from...)
		if w.k, _ = w.c.Seek(at); bytes.Equal(w.k, at) {
			w.k, _ = w.c.Next()
		}
	default:
		// Back: the last key before from, or before the first key past
		// the prefix.
		var at []byte
		if from != nil {
			at = append(bytes.Clone(prefix), from...)
		} else if len(prefix) > 0 {
			at = bytes.Clone(prefix)
			at[len(at)-1]++ // prefixes end with a NUL
		}
		if k, _ := w.c.Seek(at); at == nil || k == nil {
			w.k, _ = w.c.Last()
		} else {
			w.k, _ = w.c.Prev()
		}
	}
	w.check()
	return w
}

func (w *indexWalk) next() {
	if w.back {
		w.k, _ = w.c.Prev()
	} else {
		w.k, _ = w.c.Next()
	}
	w.check()
}

func (w *indexWalk) check() {
	if w.k != nil && !bytes.HasPrefix(w.k, w.prefix) {
		w.k = nil
	}
}

// suffix is the time key of the walk's key.
func (w *indexWalk) suffix() []byte { return w.k[len(w.prefix):] }

// Count is how many records are in state st, read from the state's
// count, kept with its bystate keys.
func (j *Journal) Count(st proposal.State) (int, error) {
	n := 0
	err := j.db.View(func(tx *bolt.Tx) error {
		n = readCount(tx.Bucket(bucketStateCount), []byte(st))
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("journal: count: %w", err)
	}
	return n, nil
}
