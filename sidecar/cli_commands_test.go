package sidecar

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/config"
)

// Usage lists every command of the table with its summary, in order, and
// Main runs a command by its name and refuses one the table does not have.
func TestCLI_CommandTable_UsageAndDispatch(t *testing.T) {
	var out bytes.Buffer
	if code := Main([]string{"--help"}, &out, &out); code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	rest := out.String()
	seen := map[string]bool{}
	for _, c := range commands() {
		if seen[c.name] {
			t.Errorf("command %s is listed twice", c.name)
		}
		seen[c.name] = true
		_, after, ok := strings.Cut(rest, "  "+c.name+" ")
		if !ok || !strings.HasPrefix(strings.TrimLeft(after, " "), c.summary+"\n") {
			t.Fatalf("usage does not list %s with its summary next:\n%s", c.name, out.String())
		}
		rest = after
	}
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"version"}, &stdout, &stderr); code != 0 || stdout.String() != "sluice-sidecar "+config.Version+"\n" {
		t.Errorf("version: exit %d, %q", code, stdout.String())
	}
	stdout.Reset()
	if code := Main([]string{"no-such-command"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), `unknown command "no-such-command"`) {
		t.Errorf("unknown command: exit %d, %q", code, stderr.String())
	}
}
