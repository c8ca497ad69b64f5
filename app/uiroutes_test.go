package app

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"testing"
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
