package journal

import (
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/sluicehq/sluice/core/proposal"
)

// Change announces a committed transition.
type Change struct {
	// Seq numbers changes in this process, from 1 without gaps: a
	// subscriber that sees a gap missed changes (its buffer was full) and
	// should re-read with List.
	Seq     uint64
	ID      string
	Agent   string
	Op      proposal.Op
	From    proposal.State // empty for a submit
	To      proposal.State
	Version uint64
}

// subscriberBuffer is how many changes a subscriber may fall behind before
// it misses some.
const subscriberBuffer = 256

// hub fans committed changes out to subscribers, and wakes waiters through
// a channel that is closed and replaced on every change (so a waiter that
// takes the channel before reading the state cannot miss a change).
type hub struct {
	mu      sync.Mutex
	seq     uint64
	subs    map[int]chan Change
	next    int
	bcast   chan struct{}
	isClose bool
}

func (h *hub) init() {
	h.subs = map[int]chan Change{}
	h.bcast = make(chan struct{})
}

func (h *hub) changed() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.bcast
}

func (h *hub) publish(c Change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.isClose {
		return
	}
	h.seq++
	c.Seq = h.seq
	for _, ch := range h.subs {
		select {
		case ch <- c:
		default: // the subscriber is behind; it sees the gap in Seq
		}
	}
	close(h.bcast)
	h.bcast = make(chan struct{})
}

func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.isClose {
		return
	}
	h.isClose = true
	for id, ch := range h.subs {
		close(ch)
		delete(h.subs, id)
	}
	close(h.bcast)
}

// Subscribe returns a channel of committed changes and a function that
// ends the subscription. The channel is closed when the journal closes or
// cancel is called. A subscriber that falls more than 256 changes behind
// misses changes and can tell from Change.Seq.
func (j *Journal) Subscribe() (<-chan Change, func()) {
	h := &j.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := make(chan Change, subscriberBuffer)
	if h.isClose {
		close(ch)
		return ch, func() {}
	}
	id := h.next
	h.next++
	h.subs[id] = ch
	return ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if c, ok := h.subs[id]; ok {
			close(c)
			delete(h.subs, id)
		}
	}
}

// notifyOnCommit publishes rec's change once tx has committed, never
// before: a subscriber must not see a transition that could still roll
// back.
func (j *Journal) notifyOnCommit(tx *bolt.Tx, rec Record, from proposal.State) {
	c := Change{ID: rec.Proposal.ID, Agent: rec.Proposal.Agent, Op: rec.Proposal.Op, From: from, To: rec.State, Version: rec.Version}
	tx.OnCommit(func() { j.hub.publish(c) })
}
