package core

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// forbidden import path prefixes for anything under core/.
var forbidden = []string{
	"github.com/wailsapp/",
	"github.com/modelcontextprotocol/",
	"github.com/sluicehq/sluice/app",
	"github.com/sluicehq/sluice/sidecar",
	"fyne.io/systray",
	"github.com/gen2brain/beeep",
}

func TestImports_CoreStaysDomain(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			t.Errorf("parse %s: %v", path, err)
			return nil
		}
		files++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range forbidden {
				if p == bad || strings.HasPrefix(p, bad) {
					t.Errorf("%s imports %s: core/ must not depend on %s", path, p, bad)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The walk must have seen the domain packages, or the check proves
	// nothing.
	if files < 20 {
		t.Fatalf("only %d Go files found under core/; is the test running in core/?", files)
	}
}

// TestImports_DetectsViolation proves the checker is not vacuous: a file
// that imports a forbidden package is caught.
func TestImports_DetectsViolation(t *testing.T) {
	src := "package x\nimport _ \"github.com/wailsapp/wails/v2\"\n"
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Unquote(f.Imports[0].Path.Value)
	caught := false
	for _, bad := range forbidden {
		if strings.HasPrefix(p, bad) {
			caught = true
		}
	}
	if !caught {
		t.Fatal("a wails import was not flagged")
	}
}

// readOnlyForbidden are the packages that write to a repository or own
// the app's state: the executor, the journal, the policy and the database
// under the journal. The sidecar only reads and forwards proposals, and
// the gateway only carries them, so neither links any of them; that holds
// by the import graph, not by discipline.
var readOnlyForbidden = []string{
	"github.com/sluicehq/sluice/core/apply",
	"github.com/sluicehq/sluice/core/journal",
	"github.com/sluicehq/sluice/core/policy",
	"go.etcd.io/bbolt",
}

// deps lists every package pkg links, as `go list -deps` reports it.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list dependencies with")
	}
	out, err := exec.Command(gobin, "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// forbiddenIn is every package of list that is one of bad or inside it.
func forbiddenIn(list, bad []string) []string {
	var found []string
	for _, p := range list {
		for _, b := range bad {
			if p == b || strings.HasPrefix(p, b+"/") {
				found = append(found, p)
			}
		}
	}
	return found
}

func TestImports_SidecarAndGatewayLinkNoWriter(t *testing.T) {
	for _, pkg := range []string{"../sidecar/cmd/sluice-sidecar", "../sidecar/cmd/sluice-sidecar-stdio", "./gateway"} {
		list := deps(t, pkg)
		if len(list) < 10 {
			t.Fatalf("go list -deps %s listed only %v", pkg, list)
		}
		if bad := forbiddenIn(list, readOnlyForbidden); len(bad) > 0 {
			t.Errorf("%s depends on %v; it must link none of %v", pkg, bad, readOnlyForbidden)
		}
	}
}

// containerClients are the clients of container runtimes: the Docker
// Engine's and Kubernetes'. Workspace runs go through the app (the
// gateway's runtime routes), so the sidecar links neither: an idle
// sidecar stays small and starts fast, and the cluster client, far
// heavier, is never in it. core/workspace, which the sidecar links,
// holds only the runtime-neutral part.
var containerClients = []string{
	"github.com/docker",
	"k8s.io",
}

func TestImports_SidecarLinksNoContainerClient(t *testing.T) {
	for _, pkg := range []string{"../sidecar/cmd/sluice-sidecar", "../sidecar/cmd/sluice-sidecar-stdio", "./workspace", "./gateway"} {
		list := deps(t, pkg)
		if len(list) < 10 {
			t.Fatalf("go list -deps %s listed only %v", pkg, list)
		}
		if bad := forbiddenIn(list, containerClients); len(bad) > 0 {
			t.Errorf("%s depends on %v; it must link none of %v", pkg, bad, containerClients)
		}
	}
	// The check is not vacuous: the app links the Docker client.
	if got := forbiddenIn(deps(t, ".."), containerClients); len(got) == 0 {
		t.Errorf("the app links no container client; is the check looking at the right packages?")
	}
}

// testSupport is every Sluice package of list that exists for tests: one
// whose name ends in "test" (gitxtest, workspacetest) or the fake model.
func testSupport(list []string) []string {
	var found []string
	for _, p := range list {
		name := p[strings.LastIndex(p, "/")+1:]
		if strings.HasPrefix(p, "github.com/sluicehq/sluice/") && (strings.HasSuffix(name, "test") || name == "fakemodel") {
			found = append(found, p)
		}
	}
	return found
}

// TestImports_BinariesLinkNoTestSupport: fixtures (a test image, a
// registry, generated repositories, a fake model) are in packages only
// tests import, so neither binary ships them.
func TestImports_BinariesLinkNoTestSupport(t *testing.T) {
	for _, pkg := range []string{"../sidecar/cmd/sluice-sidecar", "../sidecar/cmd/sluice-sidecar-stdio", ".."} {
		list := deps(t, pkg)
		if len(list) < 10 {
			t.Fatalf("go list -deps %s listed only %v", pkg, list)
		}
		if bad := testSupport(list); len(bad) > 0 {
			t.Errorf("%s links the test-support packages %v", pkg, bad)
		}
	}
}

// TestImports_ForbiddenInFindsNested proves the dependency check is not
// vacuous: a package inside a forbidden one is found.
func TestImports_ForbiddenInFindsNested(t *testing.T) {
	got := forbiddenIn([]string{"fmt", "go.etcd.io/bbolt/internal/common", "github.com/sluicehq/sluice/core/applyx"}, readOnlyForbidden)
	if len(got) != 1 || got[0] != "go.etcd.io/bbolt/internal/common" {
		t.Fatalf("forbiddenIn = %v", got)
	}
}

// TestImports_CanonicalJSONIsALeaf: canonical JSON depends on no other
// Sluice package, and a proposal computes its digest without linking the
// audit ledger.
func TestImports_CanonicalJSONIsALeaf(t *testing.T) {
	for _, p := range deps(t, "./canonjson") {
		if strings.HasPrefix(p, "github.com/sluicehq/sluice/") && p != "github.com/sluicehq/sluice/core/canonjson" {
			t.Errorf("core/canonjson depends on %s", p)
		}
	}
	if bad := forbiddenIn(deps(t, "./proposal"), []string{"github.com/sluicehq/sluice/core/audit"}); len(bad) > 0 {
		t.Errorf("core/proposal depends on %v", bad)
	}
}
