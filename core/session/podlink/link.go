package podlink

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
)

// maxNameLen bounds a stream's header (the socket's name): the pod writes
// it, so the host reads no more than this before giving up on the stream.
const maxNameLen = 64

// config is the yamux configuration of both ends. The exec stream's own
// end tells a dead link (the API server closes it), so there is no
// keepalive: under a loaded API server a ping can take longer than yamux
// waits, and a lost ping would end every connection of the session. A
// half-closed stream stays open as long as its other direction runs (yamux
// would cut it after five minutes by default): an agent's MCP connection
// lives as long as the agent.
func config() *yamux.Config {
	c := yamux.DefaultConfig()
	c.EnableKeepAlive = false
	c.ConnectionWriteTimeout = 30 * time.Second
	c.StreamCloseTimeout = 0
	c.LogOutput = io.Discard
	return c
}

// ValidName reports whether name can name a socket on the link: 1 to 64
// bytes of letters, digits, '-', '_' and '.'.
func ValidName(name string) bool {
	if name == "" || len(name) > maxNameLen {
		return false
	}
	for _, c := range []byte(name) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return true
}

// readName reads a stream's header: the name and a newline.
func readName(br *bufio.Reader) (string, error) {
	var b []byte
	for len(b) <= maxNameLen {
		c, err := br.ReadByte()
		if err != nil {
			return "", err
		}
		if c == '\n' {
			return string(b), nil
		}
		b = append(b, c)
	}
	return "", errors.New("podlink: stream header too long")
}

func writeName(w io.Writer, name string) error {
	if !ValidName(name) {
		return fmt.Errorf("podlink: invalid socket name %q", name)
	}
	_, err := io.WriteString(w, name+"\n")
	return err
}

// closeWrite ends what is written to c, leaving its other direction open
// where c can do that (a Unix or TCP connection; a yamux stream's Close is
// such a half-close).
func closeWrite(c io.Closer) {
	if hc, ok := c.(interface{ CloseWrite() error }); ok {
		_ = hc.CloseWrite()
		return
	}
	_ = c.Close()
}

// join copies both ways between a stream and a connection, each direction
// ending with a half-close. A failed copy (not an EOF) closes both
// entirely; so does the end of the session (abort). join returns when both
// directions are done, with both closed.
func join(st *yamux.Stream, in io.Reader, conn net.Conn, abort <-chan struct{}) {
	joinWith(st, conn, abort,
		func() error { _, err := io.Copy(conn, in); return err },
		func() error { _, err := io.Copy(st, conn); return err })
}

// joinWith runs toConn (stream to connection) and toStream (connection to
// stream) as join does. toConn must read the stream only through what
// was read from it so far (a bufio.Reader over st is fine: after a failure
// the rest is drained from st itself).
func joinWith(st *yamux.Stream, conn net.Conn, abort <-chan struct{}, toConn, toStream func() error) {
	var once sync.Once
	kill := func() {
		once.Do(func() {
			_ = conn.Close()
			_ = st.Close()
		})
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-abort:
			kill()
		case <-done:
		}
	}()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := toConn(); err != nil {
			kill()
			// What the other end still sends is read and dropped, so that
			// its writes end (at its FIN or the session's end) instead of
			// waiting on a window no one opens.
			_, _ = io.Copy(io.Discard, st)
			return
		}
		closeWrite(conn)
	}()
	go func() {
		defer wg.Done()
		if err := toStream(); err != nil {
			kill()
			return
		}
		_ = st.Close() // yamux: a half-close (FIN)
	}()
	wg.Wait()
	close(done)
	kill()
}
