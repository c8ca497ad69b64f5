package podlink

import (
	"context"
	"io"
	"net"
	"sync"

	"github.com/hashicorp/yamux"
)

// Forward is the pod's side of the link: every connection accepted on
// listeners[name] becomes a stream on link that starts with name. It
// returns when the link ends (nil) or ctx is cancelled (ctx.Err()), after
// closing the listeners, every connection and link. Names must be
// ValidName.
func Forward(ctx context.Context, link io.ReadWriteCloser, listeners map[string]net.Listener) error {
	sess, err := yamux.Client(link, config())
	if err != nil {
		_ = link.Close()
		closeListeners(listeners)
		return err
	}
	var wg sync.WaitGroup
	for name, ln := range listeners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					forwardConn(sess, name, conn)
				}()
			}
		}()
	}
	select {
	case <-ctx.Done():
	case <-sess.CloseChan():
	}
	closeListeners(listeners)
	_ = sess.Close()
	wg.Wait()
	return ctx.Err()
}

func forwardConn(sess *yamux.Session, name string, conn net.Conn) {
	st, err := sess.OpenStream()
	if err != nil {
		_ = conn.Close()
		return
	}
	if err := writeName(st, name); err != nil {
		_ = conn.Close()
		_ = st.Close()
		return
	}
	join(st, st, conn, sess.CloseChan())
}

func closeListeners(listeners map[string]net.Listener) {
	for _, ln := range listeners {
		_ = ln.Close()
	}
}
