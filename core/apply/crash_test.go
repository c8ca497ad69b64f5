//go:build unix

package apply

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

const crashHelperEnv = "SLUICE_APPLY_CRASH_HELPER"

// TestHelperProcess is not a test: the crash test runs the test binary
// again with crashHelperEnv set, and this executes one approved proposal
// in that process. At the step named by CRASH_STEP it prints "AT <step>"
// and waits to be killed.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(crashHelperEnv) != "1" {
		t.Skip("helper for TestCrash_SIGKILL_MidExecution")
	}
	err := crashHelper(os.Getenv("CRASH_DB"), os.Getenv("CRASH_AUDIT"), os.Getenv("CRASH_ROOT"), os.Getenv("CRASH_ID"), os.Getenv("CRASH_STEP"))
	fmt.Printf("DONE %v\n", err)
	os.Exit(0)
}

func crashHelper(db, audit, root, id, at string) error {
	j, err := journal.Open(db, journal.Options{Recorder: &fileRecorder{path: audit}, LockTimeout: 10 * time.Second})
	if err != nil {
		return err
	}
	runner, err := gitx.NewRunner(gitx.RunnerOptions{})
	if err != nil {
		return err
	}
	e, err := New(Options{Journal: j, Roots: gitx.Roots{root}, Runner: runner, Logger: quiet})
	if err != nil {
		return err
	}
	e.beforeStep = func(step string) {
		if step == at {
			// One write: the parent sees the whole line or nothing.
			os.Stdout.WriteString("AT " + step + "\n")
			time.Sleep(time.Hour)
		}
	}
	_, err = e.Execute(context.Background(), id)
	return err
}

// TestCrash_SIGKILL_MidExecution kills a real executor process with
// SIGKILL at several points of several operations. After the restart the
// proposal is needs_reconciliation, the repository is wholly in its state
// before or after the operation, and the restore point exists and brings
// back the state before.
func TestCrash_SIGKILL_MidExecution(t *testing.T) {
	cases := map[string]opCase{}
	for _, c := range opCases() {
		cases[c.name] = c
	}
	plan := []struct {
		op    string
		steps []string
	}{
		{"merge", []string{"restore-point", "merge-computed", "before-ref-update", "applied", "ended"}},
		{"commit_paths", []string{"restore-point", "committed", "applied"}},
		{"reset_hard", []string{"restore-point", "before-ref-update", "applied"}},
		{"patch_worktree", []string{"restore-point", "applied"}},
		{"patch_index", []string{"restore-point", "applied"}},
		{"reset_mixed", []string{"restore-point", "before-ref-update", "applied"}},
		{"discard", []string{"restore-point", "applied"}},
		{"branch_delete", []string{"before-ref-update", "ended"}},
	}
	for _, p := range plan {
		c := cases[p.op]
		for _, step := range p.steps {
			t.Run(p.op+"/"+step, func(t *testing.T) {
				crashAt(t, c, step)
			})
		}
	}
}

// startHelper runs the test binary as the app (TestHelperProcess) to
// execute proposal id from the journal at db and audit, stopping at step
// ("none": nowhere). It returns the helper's stdout, and its stderr as
// written so far.
func startHelper(t *testing.T, f *fixture, db, audit, id, step string) (*exec.Cmd, io.ReadCloser, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashHelperEnv+"=1", "CRASH_DB="+db, "CRASH_AUDIT="+audit, "CRASH_ROOT="+f.root,
		"CRASH_ID="+id, "CRASH_STEP="+step)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out, stderr
}

// recoverInterrupted restarts as the app does after a crash: it opens the
// journal again and recovers; proposal id must then need reconciliation.
func (f *fixture) recoverInterrupted(t *testing.T, db, audit, id string) journal.Record {
	t.Helper()
	f.open(db, audit)
	recov, err := f.j.Recover(f.e.Revalidate)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(recov.NeedsReconciliation, id) {
		t.Fatalf("recovery %+v: the interrupted proposal is not needs_reconciliation", recov)
	}
	rec, err := f.j.Get(id)
	if err != nil || rec.State != proposal.NeedsReconciliation {
		t.Fatalf("state %s, %v", rec.State, err)
	}
	return rec
}

func crashAt(t *testing.T, c opCase, step string) {
	f := newFixture(t)
	args := c.setup(f)
	before := c.states(t, f)
	rec := f.propose(args)
	id := rec.Proposal.ID
	db, audit := f.j.DB().Path(), f.rec.path
	f.j.Close()

	cmd, out, stderr := startHelper(t, f, db, audit, id, step)
	reached := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "AT ") || strings.HasPrefix(line, "DONE") {
				reached <- line
				return
			}
		}
		reached <- "EOF"
	}()
	select {
	case line := <-reached:
		if line != "AT "+step {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the helper did not stop at %s: %s\n%s", step, line, stderr.String())
		}
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the helper did not reach %s\n%s", step, stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	// Restart: the app opens the journal again and recovers.
	f.recoverInterrupted(t, db, audit, id)

	// Before or after, never in between.
	now := c.states(t, f)
	if now != before {
		c.check(t, f, rec)
		if t.Failed() {
			t.Fatalf("after a kill at %s the repository is neither before nor after:\n%s", step, diffState(before, now))
		}
	}

	list, err := f.e.ListRestorePoints(testCtx(t), f.repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(list, func(rp RestorePoint) bool { return rp.ID == id })
	if i < 0 {
		t.Fatalf("no restore point %s after the crash: %+v", id, list)
	}
	ended := list[i].End != nil
	res, err := f.e.Restore(testCtx(t), f.repo.Dir, id, false)
	switch {
	case ended && err != nil:
		t.Fatalf("restore of a point whose end was recorded: %v", err)
	case !ended && !errors.Is(err, ErrRestoreConflict):
		t.Fatalf("restore of an unfinished operation without confirmation: %v, want restore_conflict", err)
	case !ended:
		if res, err = f.e.Restore(testCtx(t), f.repo.Dir, id, true); err != nil {
			t.Fatalf("confirmed restore: %v", err)
		}
	}
	if after := c.states(t, f); after != before {
		t.Errorf("the restore point did not bring back the state before:\n%s", diffState(before, after))
	}
	if res.UndoPoint == "" {
		t.Errorf("restore result %+v", res)
	}
}
