package app

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/config"
)

// Usage lists every command of the table, in order, with each line of what
// it says of it, and Main runs a command by any of its names and refuses
// one the table does not have.
func TestMain_CommandTable_UsageAndDispatch(t *testing.T) {
	var out bytes.Buffer
	if code := Main([]string{"help"}, nil, &out, &out); code != 0 {
		t.Fatalf("help: exit %d", code)
	}
	rest := out.String()
	for _, c := range appCommands {
		for _, line := range c.usage {
			i := strings.Index(rest, line+"\n")
			if i < 0 {
				t.Fatalf("usage does not list %q (of %q) in order:\n%s", line, c.names[0], out.String())
			}
			rest = rest[i+len(line):]
		}
	}
	for _, name := range []string{"version", "--version", "-version", "-v"} {
		var stdout, stderr bytes.Buffer
		if code := Main([]string{name}, nil, &stdout, &stderr); code != 0 || stdout.String() != "sluice "+config.Version+"\n" {
			t.Errorf("%s: exit %d, %q", name, code, stdout.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"no-such-command"}, nil, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), `unknown command "no-such-command"`) ||
		!strings.Contains(stderr.String(), "usage: sluice [command]") {
		t.Errorf("unknown command: exit %d, %q", code, stderr.String())
	}
}
