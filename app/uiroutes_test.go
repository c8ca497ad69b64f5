package app

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
)

// Every exported method of API (a Wails binding) has exactly one row in
// the route table, every row names a method whose parameters it gives a
// source each, and no two rows share a pattern: the browser can call all
// that the desktop window can, and nothing else.
func TestUIAPI_RouteTable_CoversAPI(t *testing.T) {
	rows := map[string]int{}
	patterns := map[string]bool{}
	for _, rt := range uiRoutes {
		if _, err := rt.method(); err != nil {
			t.Error(err)
		}
		rows[rt.Method]++
		if patterns[rt.Pattern()] {
			t.Errorf("%s is in the table twice", rt.Pattern())
		}
		patterns[rt.Pattern()] = true
	}
	at := reflect.TypeFor[*API]()
	for i := range at.NumMethod() {
		name := at.Method(i).Name
		if rows[name] != 1 {
			t.Errorf("API.%s has %d rows in the route table, want 1", name, rows[name])
		}
		delete(rows, name)
	}
	for name := range rows {
		t.Errorf("the route table names API.%s, which API does not have", name)
	}
	// The server registers them all without a conflict of patterns.
	w := &Web{api: &API{}}
	w.registerUIRoutes(http.NewServeMux())
}

// The TypeScript client is what GenerateUIClient writes now: a change of
// the route table, of a method or of a type it carries is a change of
// frontend/src/api.gen.ts, made by `go generate ./app`.
func TestUIAPI_GeneratedClient_Current(t *testing.T) {
	want, err := GenerateUIClient()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "frontend", "src", "api.gen.ts"))
	if err != nil {
		t.Fatalf("frontend/src/api.gen.ts is missing: run go generate ./app (%v)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("frontend/src/api.gen.ts is stale: the UI's API or a type it carries changed; run go generate ./app and review the diff")
	}
}

// The handlers the table makes read each argument where the table says:
// a path value (and a body that names another id is refused, on every
// route whose body carries the id), a number in the query, the fields of
// a query struct, the fields of a strict JSON body.
func TestUIAPI_Routes_ReadArgumentsFromRequest(t *testing.T) {
	_, w, token := startWeb(t)
	base := "http://" + w.Addr()
	c := newBrowserClient(t)
	get(t, c, w.LoginURL(token), nil)
	_, body := get(t, c, base+"/api/session", nil)
	var s struct{ CSRF string }
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	const id = "00000000-0000-4000-8000-000000000000"
	call := func(method, path, reqBody string) (int, UIError, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(reqBody))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(csrfHeader, s.CSRF)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var e struct{ Error UIError }
		_ = json.Unmarshal(b, &e)
		return resp.StatusCode, e.Error, strings.TrimSpace(string(b))
	}
	for _, tc := range []struct {
		method, path, body string
		status             int
		code               errcode.Code
		says               string
	}{
		{"GET", "/api/proposals/" + id, "", 404, errcode.ProposalNotFound, ""},
		{"GET", "/api/proposals/" + id + "/diff?offset=ten", "", 400, errcode.InvalidArgument, "offset must be a number"},
		{"GET", "/api/history?state=bogus", "", 400, errcode.InvalidArgument, `unknown state "bogus"`},
		{"POST", "/api/shown", `{"screen":"elsewhere","ids":[]}`, 400, errcode.InvalidArgument, "screen is pending or proposal"},
		{"POST", "/api/roots", `{"dir":"/tmp","also":1}`, 400, errcode.InvalidArgument, `unknown field "also"`},
		{"POST", "/api/proposals/" + id + "/approve", `{"id":"11111111-0000-4000-8000-000000000000","digest":"d","note":""}`, 400, errcode.InvalidArgument, "the body's id does not match the URL"},
		{"POST", "/api/proposals/" + id + "/trust", `{"id":"11111111-0000-4000-8000-000000000000","digest":"d"}`, 400, errcode.InvalidArgument, "the body's id does not match the URL"},
		{"POST", "/api/workspaces/ws1/grants", `{"id":"ws2","egress":[]}`, 400, errcode.InvalidArgument, "the body's id does not match the URL"},
		{"POST", "/api/proposals/" + id + "/approve", `{"digest":"d","note":""}`, 404, errcode.ProposalNotFound, ""},
	} {
		status, e, raw := call(tc.method, tc.path, tc.body)
		if status != tc.status || e.Code != tc.code || !strings.Contains(e.Message, tc.says) {
			t.Errorf("%s %s %s: got %d %s, want %d %s saying %q", tc.method, tc.path, tc.body, status, raw, tc.status, tc.code, tc.says)
		}
	}
	if status, _, raw := call("POST", "/api/shown", `{"screen":"pending","ids":["`+id+`"]}`); status != 200 || raw != "true" {
		t.Errorf("POST /api/shown: got %d %s, want 200 true", status, raw)
	}
}
