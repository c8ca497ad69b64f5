package podlink

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/yamux"
)

// MaxLine bounds one line of a gated stream: the session sidecar's own
// bound (go-sdk's mcp.DefaultMaxLineLength, 16 MiB; a sidecar test keeps
// the two equal) and its line end, so every line the
// sidecar would accept is checked whole; a longer one is never forwarded
// (it could not be checked) and is answered with a parse error, as the
// sidecar answers one over its bound.
const MaxLine = 16<<20 + 2

// Error codes of the answers the gate writes.
const (
	codeParseError    = -32700
	codeInternalError = -32603
)

// gate is a gated stream: the agent's MCP, line by line.
type gate struct {
	ctx    context.Context
	in     *bufio.Reader // the stream, after its header
	st     *yamux.Stream
	conn   net.Conn
	before func(context.Context) error
	// mu keeps whole lines to the pod: the server's answers and the
	// gate's own never interleave.
	mu sync.Mutex
}

// toConn forwards the pod's lines to the session sidecar, holding back
// each tools/call until BeforeCall allows it.
func (g *gate) toConn() error {
	for {
		line, tooLong, err := readLine(g.in, MaxLine)
		if tooLong {
			if werr := g.answer(errorResponse(nil, codeParseError, fmt.Sprintf("parse error: line longer than %d bytes", MaxLine))); werr != nil {
				return werr
			}
		} else if len(line) > 0 {
			if ferr := g.forward(line); ferr != nil {
				return ferr
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

func (g *gate) forward(line []byte) error {
	calls, gated := toolCalls(line)
	if gated {
		if err := g.before(g.ctx); err != nil {
			var out []byte
			if len(calls) == 1 && !bytes.HasPrefix(bytes.TrimSpace(line), []byte("[")) {
				out = errorResponse(calls[0], codeInternalError, err.Error())
			} else if len(calls) > 0 {
				out = batchErrors(calls, err.Error())
			}
			if out == nil {
				return nil // notifications only: nothing to answer
			}
			return g.answer(out)
		}
	}
	_, err := g.conn.Write(line)
	return err
}

func (g *gate) answer(b []byte) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, err := g.st.Write(b)
	return err
}

// toStream copies the sidecar's answers to the pod a whole line at a time.
func (g *gate) toStream() error {
	br := bufio.NewReaderSize(g.conn, 64<<10)
	locked := false
	defer func() {
		if locked {
			g.mu.Unlock()
		}
	}()
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if !locked {
				g.mu.Lock()
				locked = true
			}
			if _, werr := g.st.Write(chunk); werr != nil {
				return werr
			}
			if chunk[len(chunk)-1] == '\n' {
				g.mu.Unlock()
				locked = false
			}
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return nil
		default:
			return err
		}
	}
}

// readLine returns the next line with its newline (none at the end of the
// stream). A line longer than max is read to its end with bounded memory
// and reported as too long, without its bytes.
func readLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, tooLong, err
	}
}

// toolCalls reads a line of the agent's MCP: gated is true when it holds
// a JSON-RPC message (alone or in a batch) that names a method other than
// the few that read nothing of the copy (ungated), and ids are the ids of
// its requests, for the answers when BeforeCall refuses. The gate decodes
// with the standard library, not the session sidecar's own decoder (core
// links no MCP SDK), so whatever could read as anything else is gated: a
// method key spelled another way or twice, or any method not in ungated
// (an escaped "tools\/call" decodes to itself). What passes ungated names
// exactly one method, under its exact key, that both decoders read alike.
func toolCalls(line []byte) (ids []json.RawMessage, gated bool) {
	t := bytes.TrimSpace(line)
	if len(t) == 0 || !json.Valid(t) {
		return nil, false
	}
	msgs := []json.RawMessage{t}
	if t[0] == '[' {
		msgs = nil
		if json.Unmarshal(t, &msgs) != nil {
			return nil, false
		}
	}
	for _, raw := range msgs {
		keys, err := objectKeys(raw)
		if err != nil {
			continue
		}
		methods := 0
		for _, k := range keys {
			if strings.EqualFold(k, "method") {
				methods++
			}
		}
		if methods == 0 {
			continue // a response of the agent's, to the sidecar
		}
		var m struct {
			Method json.RawMessage `json:"method"`
			ID     json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(raw, &m)
		var name string
		if methods > 1 || !slices.Contains(keys, "method") || json.Unmarshal(m.Method, &name) != nil || !ungated[name] {
			gated = true
		}
		if len(m.ID) > 0 && !bytes.Equal(m.ID, []byte("null")) {
			ids = append(ids, m.ID)
		}
	}
	return ids, gated
}

// ungated are the methods that read nothing of the session's copy: the
// handshake, the tool list, pings, cancellations.
var ungated = map[string]bool{
	"initialize": true, "notifications/initialized": true, "tools/list": true, "ping": true,
	"notifications/cancelled": true, "notifications/roots/list_changed": true,
}

// objectKeys lists a JSON object's keys in order, duplicates included.
func objectKeys(raw json.RawMessage) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, ok := tok.(string)
		if !ok {
			return nil, errors.New("not a key")
		}
		keys = append(keys, k)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   rpcError        `json:"error"`
}

func errorResponse(id json.RawMessage, code int, msg string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(rpcResponse{JSONRPC: "2.0", ID: id, Error: rpcError{Code: code, Message: msg}})
	return append(b, '\n')
}

func batchErrors(ids []json.RawMessage, msg string) []byte {
	out := make([]rpcResponse, len(ids))
	for i, id := range ids {
		out[i] = rpcResponse{JSONRPC: "2.0", ID: id, Error: rpcError{Code: codeInternalError, Message: msg}}
	}
	b, _ := json.Marshal(out)
	return append(b, '\n')
}
