package journal

import (
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/sluicehq/sluice/core/proposal"
)

// Replay finds the proposal an agent's retry of p asks for again: the one
// stored under p's idempotency key (same agent, op and session), as it is
// now. It reports false when the key is new (or p has none), and
// ErrIdempotencyConflict when the key names another change. The gateway
// asks before sealing, so that a retry is answered with the same proposal
// even when its outcome could not be sealed again now (the commit it asks
// for has landed, say).
func (j *Journal) Replay(p proposal.Proposal) (Record, bool, error) {
	if p.IdempotencyKey == "" {
		return Record{}, false, nil
	}
	if j.closed.Load() {
		return Record{}, false, ErrClosed
	}
	var rec Record
	found := false
	err := j.db.View(func(tx *bolt.Tx) error {
		var err error
		rec, found, err = j.replayIn(tx, p)
		return err
	})
	if err != nil {
		return Record{}, false, fmt.Errorf("journal: replay: %w", err)
	}
	return rec, found, nil
}

// replayIn finds, in tx, the record stored under p's idempotency key (see
// Replay); p must have a key.
func (j *Journal) replayIn(tx *bolt.Tx, p proposal.Proposal) (Record, bool, error) {
	id := tx.Bucket(bucketIdem).Get(idempotencyKey(p))
	if id == nil {
		return Record{}, false, nil
	}
	stored, err := j.getRecord(tx.Bucket(bucketProposals), string(id))
	if err != nil {
		return Record{}, false, err
	}
	// A retry is the same change asked for again: whatever the stored
	// proposal's state (a failure included), the answer is that proposal
	// as it is now. The reason is the agent's words about the change,
	// which a retry may put differently; the change itself must be the
	// same.
	again := p
	again.Reason = stored.Proposal.Reason
	if !proposal.SameIntent(stored.Proposal, again) {
		return Record{}, false, fmt.Errorf("%w: the key names proposal %s (%s), which makes another change; use a new key for a new proposal",
			ErrIdempotencyConflict, stored.Proposal.ID, stored.State)
	}
	return stored, true, nil
}
