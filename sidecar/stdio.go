package sidecar

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/gitx"
)

// MaxStdioLine bounds one inbound line of the stdio transport, the same
// bound go-sdk applies to a frame.
const MaxStdioLine = mcp.DefaultMaxLineLength

// StdioTransport serves MCP over newline-delimited JSON like go-sdk's
// StdioTransport, but one bad line from a client does not end the session.
// go-sdk's reader stops at the first line it cannot decode (invalid JSON,
// trailing data, a frame over its limit, a message that is not JSON-RPC),
// and with it the session and the sidecar. JSON-RPC 2.0 asks instead for a
// Parse error (-32700) or an Invalid Request (-32600) answer and for the
// connection to go on, so every line is vetted here first: a bad one is
// answered and dropped, a good one is passed to go-sdk unchanged.
type StdioTransport struct {
	In  io.Reader
	Out io.Writer
	Log *slog.Logger
	// MaxLine bounds one line in bytes; 0 means MaxStdioLine.
	MaxLine int
}

// Connect implements mcp.Transport.
func (t *StdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	max := t.MaxLine
	if max <= 0 {
		max = MaxStdioLine
	}
	log := t.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	pr, pw := io.Pipe()
	out := &lineWriter{w: t.Out}
	f := &lineFilter{in: bufio.NewReaderSize(t.In, 64<<10), out: out, next: pw, max: max, log: log}
	go f.run()
	// The filter bounds every line, so go-sdk's own frame cap is not needed
	// (and would count bytes differently).
	return (&mcp.IOTransport{Reader: pr, Writer: out, MaxLineLength: -1}).Connect(ctx)
}

// lineWriter serialises whole-message writes: go-sdk writes each message
// in one call, and the filter's answers must not land inside one.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lineWriter) Close() error { return nil }

type lineFilter struct {
	in   *bufio.Reader
	out  io.Writer
	next *io.PipeWriter
	max  int
	log  *slog.Logger
	// batchOK says whether the protocol version the client asked for still
	// has JSON-RPC batches: go-sdk ends the session on a batch under
	// 2025-06-18 and later.
	batchOK bool
}

// idleTrimAfter is how long a session waits without a message from its
// client before it gives the memory it no longer uses back to the system.
// A sidecar spends most of its life idle between an agent's turns, one per
// agent session on the machine; what a turn left on the heap need not stay
// resident until the next.
const idleTrimAfter = time.Second

// trimIdle gives back what an idle sidecar holds for its next call: the
// objects git reads in process kept (pack indexes: megabytes in a large
// repository, read again in tens of milliseconds), then the heap's unused
// memory.
func trimIdle() {
	if r, err := gitx.Default(); err == nil {
		r.DropObjects()
	}
	debug.FreeOSMemory()
}

func (f *lineFilter) run() {
	f.batchOK = true
	trim := time.AfterFunc(idleTrimAfter, trimIdle)
	defer trim.Stop()
	for {
		line, tooLong, err := f.readLine()
		trim.Reset(idleTrimAfter)
		if tooLong || len(bytes.TrimSpace(line)) > 0 {
			if reply := f.vet(line, tooLong); reply != nil {
				if _, werr := f.out.Write(reply); werr != nil {
					f.next.CloseWithError(werr)
					return
				}
			} else if _, werr := f.next.Write(append(line, '\n')); werr != nil {
				return // the connection was closed
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			f.next.CloseWithError(err)
			return
		}
	}
}

// readLine returns the next line without its end of line. A line longer
// than max is read to its end and discarded with bounded memory.
func (f *lineFilter) readLine() ([]byte, bool, error) {
	var buf []byte
	tooLong := false
	for {
		chunk, err := f.in.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > f.max+2 { // room for "\r\n"
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		buf = bytes.TrimSuffix(buf, []byte("\n"))
		buf = bytes.TrimSuffix(buf, []byte("\r"))
		if !tooLong && len(buf) > f.max {
			tooLong, buf = true, nil
		}
		return buf, tooLong, err
	}
}

// vet returns the answer to a line that go-sdk would not survive, or nil
// when the line may be passed on.
func (f *lineFilter) vet(line []byte, tooLong bool) []byte {
	line = bytes.TrimSpace(line)
	switch {
	case tooLong:
		return f.refuse(nil, jsonrpc.CodeParseError, fmt.Sprintf("parse error: line longer than %d bytes", f.max), 0)
	case !json.Valid(line):
		return f.refuse(nil, jsonrpc.CodeParseError, "parse error: the line is not one JSON value", len(line))
	}
	if code, msg, dup := duplicateKeyError(line); dup {
		id := idOf(line)
		if duplicateKey(line) == "id" {
			id = nil
		}
		return f.refuse(id, code, msg, len(line))
	}
	switch {
	case line[0] == '[':
		var batch []json.RawMessage
		if err := json.Unmarshal(line, &batch); err != nil || len(batch) == 0 {
			return f.refuse(nil, jsonrpc.CodeInvalidRequest, "invalid request: empty batch", len(line))
		}
		if !f.batchOK {
			return f.refuse(nil, jsonrpc.CodeInvalidRequest, "invalid request: JSON-RPC batches are not part of this protocol version", len(line))
		}
		seen := map[any]bool{}
		for _, raw := range batch {
			msg, err := jsonrpc.DecodeMessage(raw)
			if err != nil {
				return f.refuse(nil, jsonrpc.CodeInvalidRequest, "invalid request in batch: "+err.Error(), len(line))
			}
			if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
				if seen[req.ID.Raw()] {
					return f.refuse(nil, jsonrpc.CodeInvalidRequest, "invalid request: a batch repeats a request id", len(line))
				}
				seen[req.ID.Raw()] = true
			}
			f.note(msg)
		}
		return nil
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return f.refuse(idOf(line), jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error(), len(line))
	}
	f.note(msg)
	return nil
}

// note follows the protocol version the client asks for.
func (f *lineFilter) note(msg jsonrpc.Message) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "initialize" {
		return
	}
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(req.Params, &p)
	f.batchOK = p.ProtocolVersion == "2024-11-05" || p.ProtocolVersion == "2025-03-26"
}

// idOf is the request id of an object that failed to decode as JSON-RPC,
// when it has a usable one; JSON null otherwise.
func idOf(line []byte) json.RawMessage {
	var v struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &v) != nil || len(v.ID) == 0 {
		return nil
	}
	var id any
	if json.Unmarshal(v.ID, &id) != nil {
		return nil
	}
	switch id.(type) {
	case string, float64:
		return v.ID
	}
	return nil
}

func (f *lineFilter) refuse(id json.RawMessage, code int64, msg string, size int) []byte {
	f.log.Warn("stdio: refused a malformed line", "code", code, "reason", msg, "bytes", size)
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}{code, msg}})
	return append(b, '\n')
}
