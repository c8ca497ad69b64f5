package journal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/sluicehq/sluice/core/proposal"
)

// bucketPendingPaths indexes the files each pending proposal touches, so
// that a card's collisions are found by looking its own files up, not by
// reading every other pending proposal: the pending list shows a page of
// cards, each with its collisions, at the same cost with 10 or 10,000
// waiting. A key is the repository, a NUL, a path (as FilesTouched gives
// it), a NUL and the proposal's id; the value is the proposal's agent.
// Submit adds a proposal's keys, a re-sealing replaces them, and the
// transition that takes it out of pending removes them, each in the
// transaction that writes the record.
var bucketPendingPaths = []byte("pendingpaths")

// pathKeys are the keys of p's files in the pending paths index.
func pathKeys(p proposal.Proposal) [][]byte {
	files, _ := p.FilesTouched()
	files = slices.Compact(slices.Sorted(slices.Values(files)))
	out := make([][]byte, 0, len(files))
	for _, f := range files {
		out = append(out, joinKey(p.Repo, f, p.ID))
	}
	return out
}

// putPaths and deletePaths add and remove p's keys.
func putPaths(tx *bolt.Tx, p proposal.Proposal) error {
	b := tx.Bucket(bucketPendingPaths)
	for _, k := range pathKeys(p) {
		if err := b.Put(k, []byte(p.Agent)); err != nil {
			return err
		}
	}
	return nil
}

func deletePaths(tx *bolt.Tx, p proposal.Proposal) error {
	b := tx.Bucket(bucketPendingPaths)
	for _, k := range pathKeys(p) {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// indexPendingPaths creates the pending paths index and fills it from
// the pending records, for a journal written before it existed. It runs
// in Open's transaction.
func indexPendingPaths(tx *bolt.Tx) error {
	if tx.Bucket(bucketPendingPaths) != nil {
		return nil
	}
	if _, err := tx.CreateBucket(bucketPendingPaths); err != nil {
		return err
	}
	props := tx.Bucket(bucketProposals)
	prefix := byState.prefix(indexed{State: proposal.Pending})
	c := tx.Bucket(byState.bucket).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		id := idOfTimeKey(k[len(prefix):])
		var rec Record
		if err := json.Unmarshal(props.Get(id), &rec); err != nil {
			return fmt.Errorf("indexing the paths of %s: %w", id, err)
		}
		if err := putPaths(tx, rec.Proposal); err != nil {
			return err
		}
	}
	return nil
}

// collisionsIn finds, through the pending paths index, the pending
// proposals other than p in p's repository that touch one of mine (p's
// files) or a directory above or below one. For each of mine it reads
// the keys of that path and of the paths under it, and of each directory
// above it: the cost follows p's files and the collisions, not the
// number of pending proposals.
func collisionsIn(tx *bolt.Tx, p proposal.Proposal, mine []string) []Collision {
	c := tx.Bucket(bucketPendingPaths).Cursor()
	repo := joinKey(p.Repo, "")
	byID := map[string]*Collision{}
	var order []string
	hit := func(k, v []byte, file string) {
		rest := k[len(repo):]
		i := bytes.LastIndexByte(rest, 0)
		if i < 0 {
			return
		}
		id := string(rest[i+1:])
		if id == p.ID {
			return
		}
		col := byID[id]
		if col == nil {
			col = &Collision{ProposalID: id, Agent: string(v)}
			byID[id] = col
			order = append(order, id)
		}
		if n := len(col.Files); n == 0 || col.Files[n-1] != file {
			col.Files = append(col.Files, file)
		}
	}
	// scan reads the keys whose path is exactly path (sub false), or lies
	// under it (sub true).
	scan := func(path string, sub bool, file string) {
		start := append(bytes.Clone(repo), path...)
		if sub {
			start = append(start, '/')
		} else {
			start = append(start, 0)
		}
		for k, v := c.Seek(start); k != nil && bytes.HasPrefix(k, start); k, v = c.Next() {
			hit(k, v, file)
		}
	}
	// The whole tree (".") overlaps every path.
	all := func(file string) {
		for k, v := c.Seek(repo); k != nil && bytes.HasPrefix(k, repo); k, v = c.Next() {
			hit(k, v, file)
		}
	}
	for _, f := range mine {
		if f == "." {
			all(f)
			continue
		}
		scan(f, false, f)
		scan(f, true, f)
		scan(".", false, f)
		for d := f; ; {
			i := strings.LastIndexByte(d, '/')
			if i < 0 {
				break
			}
			d = d[:i]
			scan(d, false, f)
		}
	}
	// In the order of the pending index (agent, then id).
	slices.SortFunc(order, func(a, b string) int {
		if c := strings.Compare(byID[a].Agent, byID[b].Agent); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	out := make([]Collision, 0, len(order))
	for _, id := range order {
		out = append(out, *byID[id])
	}
	return out
}
