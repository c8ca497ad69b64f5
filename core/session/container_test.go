package session

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A container shows the agent's own install, never a host directory the
// image has its own of.
func TestImageTools(t *testing.T) {
	got := ImageTools([]string{
		"/home/p/.npm-global/lib/node_modules", "/usr/bin", "/usr/local/lib/node_modules", "/opt/agent/bin",
		"/usr/lib/x86_64-linux-gnu", "/usr/lib/node_modules", "/bin", "/usr", "/etc/alternatives", "/usr/local/bin", "/tmp/ci/build/tools/node_modules/",
	})
	want := []string{"/home/p/.npm-global/lib/node_modules", "/usr/local/lib/node_modules", "/opt/agent/bin",
		"/usr/lib/node_modules", "/tmp/ci/build/tools/node_modules"}
	if !slices.Equal(got, want) {
		t.Fatalf("ImageTools = %q, want %q", got, want)
	}
}

// A container sees its copy, objects, HOME, sidecar and sockets, and the
// roots and tools that hold nothing hidden; never a root that would show
// HOME, Sluice's state or a credential store, nor a system directory.
func TestContainerBinds(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	mk := func(rel string) string {
		p := filepath.Join(base, rel)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	src, srv, cfg, tools, outside := mk("home/src"), mk("srv"), mk("srv/sluice-config"), mk("home/.npm/lib/node_modules"), mk("opt/work")
	spec := &Spec{
		Session: &Session{ID: "s1", Repo: filepath.Join(src, "shop"), Objects: filepath.Join(src, "shop", ".git", "objects")},
		Copy:    "/state/copy", Home: "/state/homes/claude-code", HomePath: home,
		Sidecar: "/bin/sidecar", EgressSocket: "/tmp/r/egress.sock", MCPSocket: "/tmp/r/mcp.sock",
		Hide:   []string{home, cfg},
		Secret: []string{filepath.Join(home, ".ssh"), cfg},
	}
	c := Container{Roots: []string{src, srv, base, outside}, Tools: []string{tools, "/usr/bin"}}
	binds, shown := c.binds(spec)
	var got []string
	for _, b := range binds {
		got = append(got, fmt.Sprintf("%s=%s:%v", b.Target, b.Source, b.ReadOnly))
	}
	want := []string{
		spec.Session.Repo + "=/state/copy:false",
		spec.Session.Repo + "/.git/sluice-origin=" + spec.Session.Objects + ":true",
		home + "=/state/homes/claude-code:false",
		InsideSidecar + "=/bin/sidecar:true", InsideEgress + "=/tmp/r/egress.sock:false", InsideMCP + "=/tmp/r/mcp.sock:false",
		src + "=" + src + ":true", outside + "=" + outside + ":true", tools + "=" + tools + ":true",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("binds:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !slices.Equal(shown, []string{tools}) {
		t.Fatalf("the agent's install shown: %q", shown)
	}
}
