package journal

import (
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/sluicehq/sluice/core/proposal"
)

// EventResealed: a pending proposal was sealed again, with the same
// changes, on a base that moved under it (the entry carries the new
// digest; its note names the old one).
const EventResealed = "proposal_resealed"

// ErrNotSameRequest: a re-sealed proposal differs from the stored one in
// more than its pins and its outcome.
var ErrNotSameRequest = errors.New("a re-sealed proposal must be the same request: only its pins, outcome and digest may change")

// Reseal replaces pending proposal id, whose digest is from, with np: the
// same request sealed again on a base that moved (r says what moved and
// where it is sealed now). np must be valid and sealed, and differ from
// the stored proposal only in its pins, its outcome and its digest. The
// record stays pending under the same id, so the agent's wait goes on; an
// approval of the old digest is refused from now on (the card reloads).
// The history and the ledger say what happened.
func (j *Journal) Reseal(id, from string, np proposal.Proposal, r Reseal) (Record, error) {
	if j.closed.Load() {
		return Record{}, ErrClosed
	}
	if err := np.Validate(); err != nil {
		return Record{}, fmt.Errorf("journal: reseal: %w", err)
	}
	if np.Sealed == nil || np.ID != id {
		return Record{}, fmt.Errorf("journal: reseal %s: %w", id, ErrNotSameRequest)
	}
	var out Record
	err := j.db.Update(func(tx *bolt.Tx) error {
		props := tx.Bucket(bucketProposals)
		rec, err := j.getRecord(props, id)
		if err != nil {
			return err
		}
		now := j.now()
		if rec.State != proposal.Pending {
			return fmt.Errorf("%w: it is %s", ErrNotPending, rec.State)
		}
		if !now.Before(rec.Proposal.ExpiresAt.Time) {
			return ErrExpired
		}
		if rec.Proposal.Digest != from {
			return fmt.Errorf("%w: re-sealing %s, proposal is %s", ErrDigestMismatch, from, rec.Proposal.Digest)
		}
		if !sameRequest(rec.Proposal, np) {
			return ErrNotSameRequest
		}
		at := proposal.At(now)
		r.From, r.To, r.At = from, np.Digest, at
		if err := deletePaths(tx, rec.Proposal); err != nil {
			return err
		}
		if err := putPaths(tx, np); err != nil {
			return err
		}
		rec.Proposal = np
		rec.Version++
		rec.UpdatedAt = at
		rec.Reseals = append(rec.Reseals, r)
		note := resealNote(r)
		rec.History = append(rec.History, Step{Version: rec.Version, From: proposal.Pending, To: proposal.Pending, At: at, By: "sluice", Note: note})
		if err := putRecord(props, rec); err != nil {
			return err
		}
		if err := j.record(tx, eventFor(rec, EventResealed, proposal.Pending, proposal.Pending, "sluice", note+" (was "+from+")", "")); err != nil {
			return err
		}
		j.notifyOnCommit(tx, rec, proposal.Pending)
		out = rec
		return nil
	})
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return Record{}, ErrClosed
	}
	if err != nil {
		return Record{}, fmt.Errorf("journal: reseal %s: %w", id, err)
	}
	return out, nil
}

// sameRequest: b is a with other pins, outcome and digest only.
func sameRequest(a, b proposal.Proposal) bool {
	if len(a.Pinned.Refs) != len(b.Pinned.Refs) {
		return false
	}
	for k := range a.Pinned.Refs {
		if _, ok := b.Pinned.Refs[k]; !ok {
			return false
		}
	}
	a.Pinned.Refs, b.Pinned.Refs = nil, nil
	a.Sealed, b.Sealed = nil, nil
	a.Digest, b.Digest = "", ""
	da, err1 := a.ComputeDigest()
	db, err2 := b.ComputeDigest()
	return err1 == nil && err2 == nil && da == db
}

// resealNote says in one line where the proposal is sealed now.
func resealNote(r Reseal) string {
	on := r.Branch
	if on == "" {
		on = "a detached HEAD"
	}
	return fmt.Sprintf("re-sealed on %s at %s: same changes", on, shortSHA(r.Base))
}

func shortSHA(s string) string {
	if len(s) > 7 {
		return s[:7]
	}
	return s
}

// LastReseal is the record's latest re-sealing (nil when it was never
// re-sealed), for the card.
func (r Record) LastReseal() *Reseal {
	if len(r.Reseals) == 0 {
		return nil
	}
	x := r.Reseals[len(r.Reseals)-1]
	return &x
}
