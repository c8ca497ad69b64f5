package podlink

import (
	"bufio"
	"context"
	"io"
	"net"
	"sync"

	"github.com/hashicorp/yamux"
)

// Target is where the host connects a stream of one name.
type Target struct {
	// Dial connects to the host's endpoint (one of the launcher's Unix
	// sockets). Its ctx ends when Serve returns.
	Dial func(ctx context.Context) (net.Conn, error)
	// BeforeCall, when set, makes the stream the agent's MCP: every line
	// from the pod that is a JSON-RPC "tools/call" (alone or in a batch)
	// waits for BeforeCall and is forwarded only when it returned nil;
	// otherwise the pod gets a JSON-RPC error (-32603, the error's
	// message) for each request of the line, and the line is dropped.
	// Lines are handled one at a time, in order.
	BeforeCall func(ctx context.Context) error
}

// Serve accepts the pod's streams on link and connects each to the Target
// its header names; a stream naming no target is closed. It returns when
// the link ends (nil) or ctx is cancelled (ctx.Err()), after closing every
// stream and every connection it dialled, and link.
func Serve(ctx context.Context, link io.ReadWriteCloser, targets map[string]Target) error {
	sess, err := yamux.Server(link, config())
	if err != nil {
		_ = link.Close()
		return err
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-ctx.Done():
		case <-sess.CloseChan():
		}
		_ = sess.Close()
	}()
	// At most MaxStreams streams at once (a stream beyond is closed at
	// once), and at most MaxGated of them held line by line, each of which
	// may buffer a line of up to MaxLine: what the pod can make the
	// launcher hold is bounded.
	streams := make(chan struct{}, MaxStreams)
	gated := make(chan struct{}, MaxGated)
	for {
		st, err := sess.AcceptStream()
		if err != nil {
			break
		}
		select {
		case streams <- struct{}{}:
		default:
			_ = st.Close()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-streams }()
			serveStream(ctx, st, targets, sess.CloseChan(), gated)
		}()
	}
	cancel()
	_ = sess.Close()
	wg.Wait()
	return parent.Err()
}

// Bounds on what one link may hold open.
const (
	// MaxStreams is how many streams a link serves at once.
	MaxStreams = 256
	// MaxGated is how many of them may be gated (the agent's MCP): an
	// agent holds one or two.
	MaxGated = 8
)

func serveStream(ctx context.Context, st *yamux.Stream, targets map[string]Target, abort <-chan struct{}, gated chan struct{}) {
	br := bufio.NewReaderSize(st, 64<<10)
	refuse := func() {
		// A half-close: the pod reads EOF. What it still sends is dropped
		// until it closes too (or the link ends), so its writes never wait
		// on a window no one opens.
		_ = st.Close()
		_, _ = io.Copy(io.Discard, st)
	}
	name, err := readName(br)
	if err != nil {
		refuse()
		return
	}
	t, ok := targets[name]
	if !ok || t.Dial == nil {
		refuse()
		return
	}
	if t.BeforeCall != nil {
		select {
		case gated <- struct{}{}:
			defer func() { <-gated }()
		default:
			refuse()
			return
		}
	}
	conn, err := t.Dial(ctx)
	if err != nil {
		refuse()
		return
	}
	if t.BeforeCall == nil {
		join(st, br, conn, abort)
		return
	}
	g := &gate{in: br, conn: conn, st: st, before: t.BeforeCall, ctx: ctx}
	joinWith(st, conn, abort, g.toConn, g.toStream)
}
