package sidecar

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/apply"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
	"github.com/sluicehq/sluice/core/restorepoint"
)

// safetyRepo is a repository in which the executor ran two approved
// proposals (a branch, then a patch), after which the person reset main.
type safetyRepo struct {
	root, dir     string
	branch, patch string
}

func newSafetyRepo(t *testing.T) safetyRepo {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := gitxtest.InitAt(t, filepath.Join(root, "repo"))
	r.WriteCommit("a.txt", "one\n", "base")
	main := r.WriteCommit("a.txt", "two\n", "second")
	j, err := journal.Open(filepath.Join(t.TempDir(), "journal.db"), journal.Options{Recorder: journal.RecorderFunc(func(journal.Event) error { return nil })})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	runner, err := gitx.NewRunner(gitx.RunnerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := apply.New(apply.Options{Journal: j, Roots: gitx.Roots{root}, Runner: runner, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	run := func(id string, args proposal.Args, pins map[string]string) {
		now := time.Now()
		p := proposal.Proposal{ID: id, Op: args.Op(), Repo: r.Dir, Args: args, Pinned: proposal.Pinned{Refs: pins},
			Reason: "test", Agent: "agent", CreatedAt: proposal.At(now), ExpiresAt: proposal.At(now.Add(10 * time.Minute))}
		// As the app does when a proposal arrives.
		sealed, err := e.Seal(context.Background(), p)
		if err != nil {
			t.Fatalf("seal %s: %v", id, err)
		}
		p.Sealed = sealed
		if err := p.Seal(); err != nil {
			t.Fatal(err)
		}
		if _, _, err := j.Submit(p); err != nil {
			t.Fatal(err)
		}
		if _, err := j.Approve(id, p.Digest, "pat", ""); err != nil {
			t.Fatal(err)
		}
		if rec, err := e.Execute(context.Background(), id); err != nil || rec.State != proposal.Completed {
			t.Fatalf("execute %s: %s %v", id, rec.State, err)
		}
	}
	run("safety-branch", &proposal.BranchArgs{Name: "topic", StartPoint: "main"}, map[string]string{"main": main})
	run("safety-patch", &proposal.PatchArgs{Target: proposal.PatchWorktree,
		Patch: "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-two\n+patched\n"}, map[string]string{"HEAD": main})
	r.Git("reset", "-q", "--hard", "HEAD~1")
	return safetyRepo{root: root, dir: r.Dir, branch: "safety-branch", patch: "safety-patch"}
}

func TestSafety_Tools_ReadRestorePointsAndTimeline(t *testing.T) {
	sr := newSafetyRepo(t)
	cs := gitSession(t, sr.root)
	before := gitxtest.Snapshot(t, sr.root)

	list := gitCallOK[RestorePointsOut](t, cs, "restore_points", map[string]any{"repoPath": sr.dir})
	if list.Total != 2 || len(list.RestorePoints) != 2 || list.RestorePoints[0].ID != sr.patch || list.RestorePoints[1].ID != sr.branch {
		t.Fatalf("restore_points = %+v", list)
	}
	br := list.RestorePoints[1]
	if br.Kind != "proposal" || br.Op != "branch" || br.Outcome != "completed" || br.Refs["refs/heads/topic"] != "" {
		t.Errorf("branch restore point %+v", br)
	}
	if one := gitCallOK[RestorePointsOut](t, cs, "restore_points", map[string]any{"repoPath": sr.dir, "limit": 1}); len(one.RestorePoints) != 1 || one.Total != 2 {
		t.Errorf("limit 1: %+v", one)
	}

	d := gitCallOK[RestorePointDetailsOut](t, cs, "restore_point_details", map[string]any{"repoPath": sr.dir, "restorePointId": sr.patch})
	// A patch to the files records the paths it changes, and says so.
	if d.Op != "patch" || len(d.Worktrees) != 1 || !strings.Contains(d.Worktrees[0], "HEAD main at ") ||
		!strings.Contains(d.Worktrees[0], "paths the operation changes") {
		t.Errorf("details %+v", d)
	}
	// The person's reset after the patch is work a restore would
	// overwrite.
	if len(d.ChangedSince) == 0 {
		t.Errorf("details name no later changes: %+v", d)
	}

	tl := gitCallOK[SafetyTimelineOut](t, cs, "safety_timeline", map[string]any{"repoPath": sr.dir, "limit": 20})
	var rp, reset, bySluice string
	for _, e := range tl.Events {
		switch {
		case e.Kind == restorepoint.EventRestorePoint && rp == "":
			rp = e.ID
		case e.Kind == restorepoint.EventRefMoved && strings.HasPrefix(e.Message, "reset:") && reset == "":
			reset = e.ID
		case e.BySluice && e.Kind == restorepoint.EventRefMoved:
			bySluice = e.ID
		}
	}
	if rp == "" || reset == "" || bySluice == "" {
		t.Fatalf("timeline lacks a restore point, the person's reset or Sluice's branch: %+v", tl.Events)
	}
	ev := gitCallOK[SafetyEventOut](t, cs, "safety_event", map[string]any{"repoPath": sr.dir, "eventId": reset})
	// The commit the reset left is still held by topic and the restore
	// points, so nothing is recoverable only from the reflog.
	if ev.ID != reset || ev.From == "" || ev.To == "" || len(ev.Recoverable) != 0 {
		t.Errorf("reset event %+v", ev)
	}
	ev = gitCallOK[SafetyEventOut](t, cs, "safety_event", map[string]any{"repoPath": sr.dir, "eventId": rp})
	if ev.Kind != restorepoint.EventRestorePoint {
		t.Errorf("restore point event %+v", ev)
	}
	requireUnchanged(t, before, gitxtest.Snapshot(t, sr.root))
}

func TestSafety_Tools_Refusals(t *testing.T) {
	sr := newSafetyRepo(t)
	outside, _ := filepath.EvalSymlinks(t.TempDir())
	gitxtest.InitAt(t, outside).WriteCommit("x", "x\n", "x")
	cs := gitSession(t, sr.root)
	for _, c := range []struct {
		tool string
		args map[string]any
		code errcode.Code
	}{
		{"restore_points", map[string]any{"repoPath": outside}, errcode.PathOutsideRoots},
		{"safety_timeline", map[string]any{"repoPath": outside}, errcode.PathOutsideRoots},
		{"restore_point_details", map[string]any{"repoPath": sr.dir, "restorePointId": "missing"}, errcode.InvalidArgument},
		{"restore_point_details", map[string]any{"repoPath": sr.dir, "restorePointId": "../../x"}, errcode.InvalidArgument},
		{"safety_event", map[string]any{"repoPath": sr.dir, "eventId": "nonsense"}, errcode.InvalidArgument},
		{"restore_points", map[string]any{"repoPath": sr.dir, "limit": 501}, errcode.InvalidArgument},
	} {
		if e := gitCallErr(t, cs, c.tool, c.args); e.Code != c.code {
			t.Errorf("%s(%v): %s (%s), want %s", c.tool, c.args, e.Code, e.Message, c.code)
		} else if c.code == errcode.PathOutsideRoots && strings.Contains(e.Message, outside) {
			t.Errorf("%s echoed the path outside the roots: %s", c.tool, e.Message)
		}
	}
}

func requireUnchanged(t *testing.T, before, after map[string]string) {
	t.Helper()
	if d := gitxtest.DiffSnapshots(before, after); len(d) > 0 {
		t.Fatalf("a read-only tool changed the repository:\n%s", strings.Join(d, "\n"))
	}
}
