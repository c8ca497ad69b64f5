package sidecar

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestDuplicateKey_Paths(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"a":1,"b":2}`, ""},
		{`{"a":{"x":1},"b":{"x":2}}`, ""},
		{`[{"a":1},{"a":2}]`, ""},
		{`{"a":"\"a\"","b":["a","a"]}`, ""},
		{`{"a":1,"a":2}`, "a"},
		{`{"params":{"name":"x","arguments":{},"name":"y"}}`, "params.name"},
		{`{"params":{"arguments":{"p":[1,{"k":1,"k":2}]}}}`, "params.arguments.p[1].k"},
		{`[{"id":1},{"id":2,"params":{"n":1,"n":2}}]`, "[1].params.n"},
		{`{"a\u0062":1,"ab":2}`, "ab"},
	} {
		if got := duplicateKey([]byte(c.in)); got != c.want {
			t.Errorf("duplicateKey(%s) = %q, want %q", c.in, got, c.want)
		}
	}
}

// dupCall is a tools/call that names its tool twice.
const dupCall = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"repo_brief","name":"sluice_capabilities","arguments":{}}}`

// rpcAnswer is one JSON-RPC response as a test reads it.
type rpcAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *rpcErrorBody   `json:"error"`
}

// checkDuplicateRefusal fails unless a is the invalid-params answer to
// dupCall.
func checkDuplicateRefusal(t *testing.T, a rpcAnswer) {
	t.Helper()
	if string(a.ID) != "7" || a.Result != nil || a.Error == nil || a.Error.Code != -32602 ||
		!strings.Contains(a.Error.Message, "duplicate key") || !strings.Contains(a.Error.Message, "params.name") {
		t.Fatalf("answer to a tools/call naming its tool twice: id %s result %s error %+v; want -32602 naming params.name", a.ID, a.Result, a.Error)
	}
}

// TestStdio_DuplicateKey_InvalidParams: over the stdio transport, a
// tools/call whose params name "name" twice is answered with invalid
// params naming the key, and the session goes on.
func TestStdio_DuplicateKey_InvalidParams(t *testing.T) {
	_, cfg := testEnv(t)
	s, err := New(Options{Config: cfg, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- s.Server().Run(ctx, &StdioTransport{In: inR, Out: outW}) }()
	answers := make(chan rpcAnswer, 8)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			var a rpcAnswer
			if json.Unmarshal(sc.Bytes(), &a) == nil && a.ID != nil {
				answers <- a
			}
		}
	}()
	next := func(what string) rpcAnswer {
		t.Helper()
		select {
		case a := <-answers:
			return a
		case <-ctx.Done(): // a hang guard, not a measurement
			t.Fatalf("no answer to %s", what)
			return rpcAnswer{}
		}
	}
	send := func(line string) {
		t.Helper()
		if _, err := inW.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if a := next("initialize"); a.Error != nil {
		t.Fatalf("initialize: %+v", a.Error)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(dupCall)
	checkDuplicateRefusal(t, next("the duplicate-key call"))
	send(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"sluice_capabilities","arguments":{}}}`)
	if a := next("the call after"); string(a.ID) != "8" || a.Error != nil || a.Result == nil {
		t.Fatalf("the call after the refusal: %s %+v", a.ID, a.Error)
	}
	inW.Close()
	<-served
	outW.Close()
}

// TestHTTP_DuplicateKey_InvalidParams: over streamable HTTP, the same
// call gets a JSON-RPC invalid-params answer, and the session goes on.
func TestHTTP_DuplicateKey_InvalidParams(t *testing.T) {
	env, secrets := startHTTP(t, nil, "agent")
	code, hdr, body := post(t, env.srv.URL(), map[string]string{"Authorization": "Bearer " + secrets["agent"]}, initializeBody)
	sid := hdr.Get("Mcp-Session-Id")
	if code != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %q %s", code, sid, body)
	}
	h := map[string]string{"Authorization": "Bearer " + secrets["agent"], "Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"}
	if code, _, body := post(t, env.srv.URL(), h, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", code, body)
	}
	code, _, body = post(t, env.srv.URL(), h, dupCall)
	var a rpcAnswer
	if err := json.Unmarshal([]byte(sseData(body)), &a); err != nil {
		t.Fatalf("answer to the duplicate-key call: %d %q: %v", code, body, err)
	}
	checkDuplicateRefusal(t, a)
	code, _, body = post(t, env.srv.URL(), h, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"sluice_capabilities","arguments":{}}}`)
	var after rpcAnswer
	if err := json.Unmarshal([]byte(sseData(body)), &after); err != nil || string(after.ID) != "8" || after.Error != nil || after.Result == nil {
		t.Fatalf("the call after the refusal: %d %q", code, body)
	}
}

// sseData is the data of the first event of a text/event-stream body, or
// the body itself when it is plain JSON.
func sseData(body string) string {
	for _, l := range strings.Split(body, "\n") {
		if d, ok := strings.CutPrefix(l, "data: "); ok {
			return d
		}
	}
	return body
}
