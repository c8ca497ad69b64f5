package sidecar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A JSON object that names a key twice means different things to
// different readers: Go's decoders keep the last value, others the first,
// and a client's approval prompt, a proxy's allow list or an audit reader
// may each pick another one than the handler that runs. Sluice refuses
// such a message on every transport before any of it is decoded, with a
// JSON-RPC error that names the key, so the tool that is shown, allowed,
// audited and run is always the one tool the message names.

// duplicateKey returns the path of the first key named twice in one
// object of data ("params.name"), or "" when there is none. data must be
// valid JSON.
func duplicateKey(data []byte) string {
	if !bytes.Contains(data, []byte(`"`)) {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		object bool
		keys   map[string]bool
		// key is the member being read, or the index in an array.
		key   string
		index int
		// wantKey is set in an object where the next string is a key.
		wantKey bool
	}
	var stack []*frame
	path := func(last string) string {
		var parts []string
		for _, f := range stack {
			if f.object {
				parts = append(parts, f.key)
			} else {
				parts = append(parts, fmt.Sprintf("[%d]", f.index))
			}
		}
		parts = append(parts[:len(parts)-1], last)
		return strings.Replace(strings.Join(parts, "."), ".[", "[", -1)
	}
	// value is called after each complete value inside the top frame.
	value := func() {
		if n := len(stack); n > 0 {
			if f := stack[n-1]; f.object {
				f.wantKey = true
			} else {
				f.index++
			}
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return "" // io.EOF, or invalid JSON the caller refuses anyway
		}
		var top *frame
		if n := len(stack); n > 0 {
			top = stack[n-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, &frame{object: true, keys: map[string]bool{}, wantKey: true})
			case '[':
				stack = append(stack, &frame{})
			default:
				stack = stack[:len(stack)-1]
				value()
			}
		case string:
			if top != nil && top.object && top.wantKey {
				if top.keys[t] {
					return path(t)
				}
				top.keys[t] = true
				top.key, top.wantKey = t, false
				continue
			}
			value()
		default:
			value()
		}
	}
}

// duplicateKeyError is the answer to a line or body whose JSON names a key twice:
// a duplicate inside params is invalid params (-32602), anywhere else an
// invalid request (-32600). ok is false when data has no duplicate key.
func duplicateKeyError(data []byte) (code int64, msg string, ok bool) {
	p := duplicateKey(data)
	if p == "" {
		return 0, "", false
	}
	code = jsonrpc.CodeInvalidRequest
	what := "invalid request"
	if strings.HasPrefix(p, "params.") || strings.HasPrefix(p, "params[") || strings.Contains(p, "].params.") {
		code, what = jsonrpc.CodeInvalidParams, "invalid params"
	}
	return code, fmt.Sprintf("%s: duplicate key %q; name each key once", what, p), true
}

// refuseDuplicateKeysHTTP answers a POSTed JSON-RPC message whose JSON
// names a key twice with HTTP 400 and a JSON-RPC error, before the SDK
// decodes it. A body over the SDK's limit is passed on for the SDK to
// refuse.
func refuseDuplicateKeysHTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, mcp.DefaultMaxRequestBodyBytes+1))
		if err != nil && !errors.Is(err, io.EOF) {
			httpError(w, http.StatusBadRequest, "cannot read the request body")
			return
		}
		if len(body) <= mcp.DefaultMaxRequestBodyBytes && json.Valid(body) {
			if code, msg, dup := duplicateKeyError(body); dup {
				id := idOf(body)
				if id == nil || duplicateKey(body) == "id" {
					id = json.RawMessage("null")
				}
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Cache-Control", "no-store")
				w.WriteHeader(http.StatusBadRequest)
				b, _ := json.Marshal(rpcError{JSONRPC: "2.0", ID: id, Error: rpcErrorBody{Code: code, Message: msg}})
				w.Write(append(b, '\n'))
				return
			}
		}
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
		next.ServeHTTP(w, r)
	})
}

// rpcError is a JSON-RPC error response written by Sluice itself.
type rpcError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   rpcErrorBody    `json:"error"`
}

type rpcErrorBody struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}
