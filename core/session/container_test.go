package session

import (
	"slices"
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
