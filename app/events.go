package app

import (
	"reflect"
	"sync"

	"github.com/sluicehq/sluice/core/proposal"
)

// Event is something the UI should react to without a reload. Names are
// namespaced ("proposal:created", "proposal:updated").
type Event struct {
	Name string `json:"name"`
	Data any    `json:"data,omitempty"`
}

// uiEvents are the events the UI listens for, each with the Go type of
// what it carries (nil: nothing); the TypeScript client's EventPayloads
// is written from it (see GenerateUIClient).
var uiEvents = []uiEvent{
	{Name: "proposal:created", Payload: reflect.TypeFor[ProposalEvent](), Doc: "A proposal arrived."},
	{Name: "proposal:updated", Payload: reflect.TypeFor[ProposalEvent](), Doc: "A proposal moved to another state, or its card changed."},
	{Name: "proposals:resync", Doc: "Changes may have been missed: read the proposals again."},
	{Name: "workspace:changed"},
	{Name: "session:changed"},
	{Name: "timeline:changed", Payload: reflect.TypeFor[TimelineChanged]()},
	{Name: "app:notifications", Payload: reflect.TypeFor[bool](), Doc: "Desktop notifications were turned on or off."},
	{Name: "ui:focus", Payload: reflect.TypeFor[FocusEvent](), DesktopOnly: true,
		Doc: "A notification was clicked: show this proposal."},
}

// uiEvent is one event of uiEvents.
type uiEvent struct {
	Name    string
	Payload reflect.Type
	// DesktopOnly: only the desktop window's Wails bridge emits it, never
	// the headless server's stream.
	DesktopOnly bool
	Doc         string
}

// ProposalEvent is what proposal:created and proposal:updated carry.
type ProposalEvent struct {
	ID      string         `json:"id"`
	Agent   string         `json:"agent,omitempty"`
	Op      proposal.Op    `json:"op,omitempty"`
	State   proposal.State `json:"state"`
	Version uint64         `json:"version"`
}

// TimelineChanged is what timeline:changed carries: the repository whose
// restore points changed.
type TimelineChanged struct {
	Repo string `json:"repo"`
}

// FocusEvent is what ui:focus carries: the proposal to show.
type FocusEvent struct {
	ID string `json:"id"`
}

// Bus fans events out to subscribers (the desktop window's event bridge and
// every SSE stream of the headless UI). A slow subscriber loses events
// rather than blocking the app; the UI re-fetches state on every event, so
// a lost event costs only freshness until the next one.
type Bus struct {
	mu     sync.Mutex
	subs   map[chan Event]struct{}
	closed bool
}

// NewBus returns an empty bus.
func NewBus() *Bus { return &Bus{subs: map[chan Event]struct{}{}} }

// Subscribe returns a channel of events and a function that ends the
// subscription.
func (b *Bus) Subscribe() (<-chan Event, func()) {
	ch := make(chan Event, 32)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		close(ch)
		return ch, func() {}
	}
	b.subs[ch] = struct{}{}
	return ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.subs[ch]; ok {
			delete(b.subs, ch)
			close(ch)
		}
	}
}

// Publish delivers ev to every subscriber that has room.
func (b *Bus) Publish(ev Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- ev:
		default:
		}
	}
}

// Subscribers is how many subscriptions are open: work that only feeds
// the UI can rest while nobody looks.
func (b *Bus) Subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}

// Close ends every subscription.
func (b *Bus) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for ch := range b.subs {
		close(ch)
		delete(b.subs, ch)
	}
}
