//go:build unix

package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
)

// waitFor polls cond until it holds; the deadline only bounds a failure.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRun_LiveProgressAndRecord runs a command that prints, then waits for
// a file the test creates only after it has seen that output twice: as a
// progress report, and as a running record read by a second Manager on
// the same store (as the app reads a sidecar's runs).
func TestRun_LiveProgressAndRecord(t *testing.T) {
	t.Parallel()
	m := newManager(t, true)
	w := freshWS(t, m)
	other, err := Open(Options{StateDir: m.opts.StateDir, ConfigDir: m.opts.ConfigDir})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	var mu sync.Mutex
	var reports []RunProgress
	done := runInBackground(m, w.ID, RunRequest{
		Argv: []string{"sh", "-c", "echo first; while [ ! -f stop ]; do sleep 0.1; done; echo second"},
		OnProgress: func(p RunProgress) {
			mu.Lock()
			reports = append(reports, p)
			mu.Unlock()
		},
	})
	waitFor(t, "a progress report with the first line", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(reports) > 0 && reports[len(reports)-1].Stdout == "first\n"
	})
	var running RunResult
	waitFor(t, "a running record with the first line", func() bool {
		runs, err := other.Runs(w.ID)
		if err != nil {
			t.Fatalf("Runs during a run: %v", err)
		}
		if len(runs) == 1 && runs[0].Running && runs[0].Stdout == "first\n" {
			running = runs[0]
			return true
		}
		return false
	})
	if running.Interrupted || running.ExitCode != 0 || len(running.Argv) != 3 {
		t.Fatalf("running record: %+v", running)
	}
	select {
	case r := <-done:
		t.Fatalf("the run ended before it was told to: %+v %v", r.res, r.err)
	default:
	}
	writeFile(t, filepath.Join(m.treeDir(w.ID), "stop"), "")
	r := <-done
	if r.err != nil || r.res.Stdout != "first\nsecond\n" || r.res.Running {
		t.Fatalf("result: %+v %v", r.res, r.err)
	}
	mu.Lock()
	last := reports[len(reports)-1]
	for i := 1; i < len(reports); i++ {
		if reports[i].Elapsed < reports[i-1].Elapsed || reports[i].RunID != r.res.ID {
			t.Errorf("report %d: %+v after %+v", i, reports[i], reports[i-1])
		}
	}
	mu.Unlock()
	if last.Stdout != "first\nsecond\n" || last.Elapsed <= 0 || last.OutputBytes != 13 {
		t.Fatalf("the last report: %+v", last)
	}
	runs, err := other.Runs(w.ID)
	if err != nil || len(runs) != 1 || runs[0].Running || runs[0].Stdout != "first\nsecond\n" {
		t.Fatalf("after the run: %+v %v", runs, err)
	}
}

// TestRuns_LeftRunningByACrashIsInterrupted: a running record whose run no
// process holds any more is reported interrupted, with no exit code.
func TestRuns_LeftRunningByACrashIsInterrupted(t *testing.T) {
	t.Parallel()
	m := newManager(t, false)
	w := freshWS(t, m)
	rec := RunResult{ID: "r-crashed", WorkspaceID: w.ID, Argv: []string{"make"}, StartedAt: time.Now(), Running: true, Stdout: "half"}
	b, _ := json.Marshal(rec)
	if err := os.MkdirAll(m.runsDir(w.ID), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(m.runsDir(w.ID), "r-crashed.json"), string(b))
	runs, err := m.Runs(w.ID)
	if err != nil || len(runs) != 1 || runs[0].Running || !runs[0].Interrupted || runs[0].ExitCode != -1 {
		t.Fatalf("Runs: %+v %v", runs, err)
	}
	if _, err := m.Runs("../x"); !errors.Is(err, ErrInvalidID) {
		t.Fatalf("Runs with a bad id: %v", err)
	}
}

// TestRun_ErrorLeavesNoRunningRecord: a run that ends in an error (here it
// is cancelled, as when the agent goes away) has no result, and leaves no
// running record behind.
func TestRun_ErrorLeavesNoRunningRecord(t *testing.T) {
	t.Parallel()
	m := newManager(t, true)
	w := freshWS(t, m)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := m.Run(ctx, w.ID, RunRequest{Argv: []string{"sh", "-c", "echo started; sleep 60"}})
		done <- err
	}()
	waitFor(t, "the running record with the run's first output", func() bool {
		runs, _ := m.Runs(w.ID)
		return len(runs) == 1 && runs[0].Running && runs[0].Stdout == "started\n"
	})
	cancel()
	if err := <-done; !errcode.IsCode(err, errcode.Timeout) {
		t.Fatalf("a cancelled run: %v", err)
	}
	if runs, err := m.Runs(w.ID); err != nil || len(runs) != 0 {
		t.Fatalf("a cancelled run left evidence: %+v %v", runs, err)
	}
}

// TestStamp_ChangesWithRunRecordsOnly: the stamp a watcher compares moves
// when a run record appears or is rewritten, and stays put when nothing
// changed or when a file that is no record appears.
func TestStamp_ChangesWithRunRecordsOnly(t *testing.T) {
	t.Parallel()
	m := newManager(t, false)
	w := freshWS(t, m)
	stamp := func() string {
		t.Helper()
		s, err := m.Stamp()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	first := stamp()
	if again := stamp(); again != first {
		t.Fatalf("the stamp moved with nothing changed: %s then %s", first, again)
	}
	if err := os.MkdirAll(m.runsDir(w.ID), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(m.runsDir(w.ID), ".r1.json.tmp-1"), "partial")
	if s := stamp(); s != first {
		t.Fatal("a temporary file moved the stamp")
	}
	rec := filepath.Join(m.runsDir(w.ID), "r1.json")
	writeFile(t, rec, `{"id":"r1","running":true,"stdout":"a"}`)
	second := stamp()
	if second == first {
		t.Fatal("a new run record did not move the stamp")
	}
	writeFile(t, rec, `{"id":"r1","running":true,"stdout":"ab"}`)
	if stamp() == second {
		t.Fatal("a rewritten run record did not move the stamp")
	}
}
