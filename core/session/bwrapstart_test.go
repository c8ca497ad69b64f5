package session

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
)

// raceMessage is what bubblewrap 0.8 prints when its set-up loses the
// race with the host's mounts, as seen here while Docker removed
// containers.
const raceMessage = `bwrap: Can't bind mount /oldroot/ on /newroot/: Unable to apply mount flags: remount "/newroot/var/lib/docker/overlay2/2e1a9ca4/merged": Invalid argument`

// flakyBwrap is a bwrap that ends in its set-up, printing message, the
// first fails times it is run, then is the real bwrap; count is where it
// counts its runs.
func flakyBwrap(t *testing.T, fails int, message string) (path, count string) {
	t.Helper()
	real, err := FindBubblewrap()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	count = filepath.Join(dir, "runs")
	path = filepath.Join(dir, "bwrap")
	script := fmt.Sprintf(`#!/bin/sh
n=$(cat %[1]q 2>/dev/null || echo 0); n=$((n+1)); echo $n > %[1]q
if [ $n -le %[2]d ]; then echo %[3]q >&2; exit 1; fi
exec %[4]q "$@"
`, count, fails, message, real)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, count
}

func runs(t *testing.T, count string) int {
	t.Helper()
	b, _ := os.ReadFile(count)
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// A sandbox whose set-up lost the race with the host's mounts is made
// again, with or without a terminal: the agent runs once, and the person
// sees nothing of the lost attempts.
func TestBubblewrap_LostMountRace_MadeAgain(t *testing.T) {
	for _, terminal := range []bool{false, true} {
		t.Run(fmt.Sprintf("terminal=%v", terminal), func(t *testing.T) {
			sb := newSandbox(t)
			bwrap, count := flakyBwrap(t, 2, raceMessage)
			ranFile := filepath.Join(sb.spec.Session.Repo, "ran")
			sb.spec.Argv = []string{"/bin/sh", "-c", "echo once >> " + ranFile + "; echo AGENT-SAID"}
			var out bytes.Buffer
			stdio := Stdio{Out: &out, Err: &out}
			if terminal {
				stdio.In = personTerminal(t)
			}
			p, err := Bubblewrap{Path: bwrap}.Start(sb.spec, stdio)
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			if code, err := p.Wait(); code != 0 || err != nil {
				t.Fatalf("exit %d, %v:\n%s", code, err, out.String())
			}
			if n := runs(t, count); n != 3 {
				t.Errorf("bwrap ran %d times, want 3 (two lost races, then the sandbox)", n)
			}
			if b, _ := os.ReadFile(filepath.Join(sb.spec.Copy, "ran")); string(b) != "once\n" {
				t.Errorf("the agent ran %q times in the copy, want once", b)
			}
			if !strings.Contains(out.String(), "AGENT-SAID") {
				t.Errorf("the agent's output is missing:\n%s", out.String())
			}
			if strings.Contains(out.String(), "Unable to apply mount flags") {
				t.Errorf("a lost attempt reached the person:\n%s", out.String())
			}
		})
	}
}

// A set-up that fails for another reason is not tried again: Start says
// what bwrap said, typed, and nothing ran.
func TestBubblewrap_SetupFailure_SaidOnce(t *testing.T) {
	sb := newSandbox(t)
	bwrap, count := flakyBwrap(t, 100, "bwrap: Can't find source path /nowhere: No such file or directory")
	sb.spec.Argv = []string{"/bin/true"}
	var out bytes.Buffer
	_, err := Bubblewrap{Path: bwrap}.Start(sb.spec, Stdio{Out: &out, Err: &out})
	var ee *errcode.Error
	if !errors.As(err, &ee) || ee.Code != errcode.Unsupported || !strings.Contains(err.Error(), "Can't find source path /nowhere") {
		t.Fatalf("Start: %v, want an unsupported error with bwrap's words", err)
	}
	if n := runs(t, count); n != 1 {
		t.Errorf("bwrap ran %d times, want 1", n)
	}
	if out.Len() != 0 {
		t.Errorf("the failed set-up also went to the person's output: %q", out.String())
	}
	// Lost races without end: a few tries, then the error.
	bwrap, count = flakyBwrap(t, 100, raceMessage)
	if _, err := (Bubblewrap{Path: bwrap}).Start(sb.spec, Stdio{Out: &out, Err: &out}); err == nil || !strings.Contains(err.Error(), "Unable to apply mount flags") {
		t.Fatalf("Start: %v, want the race's words after the last try", err)
	}
	if n := runs(t, count); n != bwrapAttempts {
		t.Errorf("bwrap ran %d times, want %d", n, bwrapAttempts)
	}
}

// An agent that ran is never run again, whatever it prints: one that
// ends printing bwrap's words for a lost race is an agent that exited 1.
func TestBubblewrap_AgentMimicsLostRace_NotRunAgain(t *testing.T) {
	sb := newSandbox(t)
	ranFile := filepath.Join(sb.spec.Session.Repo, "ran")
	sb.spec.Argv = []string{"/bin/sh", "-c", "echo once >> " + ranFile + `; printf '%s\n' "$1" >&2; exit 1`, "sh", raceMessage}
	var out bytes.Buffer
	p, err := Bubblewrap{}.Start(sb.spec, Stdio{Out: &out, Err: &out})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if code, _ := p.Wait(); code != 1 {
		t.Errorf("exit %d, want the agent's 1", code)
	}
	if b, _ := os.ReadFile(filepath.Join(sb.spec.Copy, "ran")); string(b) != "once\n" {
		t.Errorf("the agent ran %q times, want once", b)
	}
	if !strings.Contains(out.String(), "Unable to apply mount flags") {
		t.Errorf("the agent's own words were not passed on:\n%s", out.String())
	}
}
