package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/apply"
	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
	"github.com/sluicehq/sluice/core/restorepoint"
)

// TestTendSealed_App_FoldsAndLetsGoPastRetention: the app's tend folds
// every proposal's sealed ref into the repository's one kept ref, keeps
// the pending and the completed proposals' objects through git's own gc,
// and lets go of those of a proposal rejected longer than the retention
// ago and of one whose record is gone.
func TestTendSealed_App_FoldsAndLetsGoPastRetention(t *testing.T) {
	cfg := isolate(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg.AllowedRoots = []string{root}
	r := gitxtest.InitAt(t, filepath.Join(root, "repo"))
	r.WriteCommit("a.txt", "one\n", "base")
	a, err := Start(cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	ctx := context.Background()
	propose := func(i int) journal.Record {
		t.Helper()
		name := fmt.Sprintf("f%d.txt", i)
		r.Write(name, fmt.Sprintf("proposal %d\n", i))
		args := &proposal.CommitArgs{Message: name, Paths: []string{name}}
		now := time.Now()
		p := proposal.Proposal{ID: fmt.Sprintf("tend-%d", i), Op: args.Op(), Repo: r.Dir, Args: args, Reason: "test", Agent: "agent-a",
			Pinned: proposal.Pinned{Refs: map[string]string{}}, CreatedAt: proposal.At(now), ExpiresAt: proposal.At(now.Add(time.Hour))}
		for _, ref := range args.Pins() {
			p.Pinned.Refs[ref] = r.Git("rev-parse", ref)
		}
		if p.Sealed, err = a.executor.Seal(ctx, p); err != nil {
			t.Fatal(err)
		}
		if err := p.Seal(); err != nil {
			t.Fatal(err)
		}
		rec, _, err := a.journal.Submit(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.executor.Keep(ctx, p); err != nil {
			t.Fatal(err)
		}
		return rec
	}
	pending, rejected := propose(1), propose(2)
	if _, err := a.journal.Reject(rejected.Proposal.ID, "owner:web", ""); err != nil {
		t.Fatal(err)
	}
	// A ref whose proposal's record is gone.
	r.Git("update-ref", proposal.SealedRef("tend-gone"), "HEAD")

	// Within the retention, only the record-less one goes.
	a.tendSealedOnce(ctx, time.Now())
	if ids, err := a.executor.SealedIDs(ctx, r.Dir); err != nil || !slices.Equal(ids, []string{"tend-1", "tend-2"}) {
		t.Fatalf("kept after the first tend: %q %v", ids, err)
	}
	// Past it, the rejected one goes too; the pending one stays.
	a.tendSealedOnce(ctx, time.Now().Add(sealedRetention+time.Hour))
	if ids, err := a.executor.SealedIDs(ctx, r.Dir); err != nil || !slices.Equal(ids, []string{"tend-1"}) {
		t.Fatalf("kept after the retention: %q %v", ids, err)
	}
	if refs := r.Git("for-each-ref", "--format=%(refname)", "refs/sluice/"); refs != "refs/sluice/kept" {
		t.Errorf("Sluice refs: %q", refs)
	}
	r.Git("-c", "gc.reflogExpire=now", "-c", "gc.reflogExpireUnreachable=now", "reflog", "expire", "--all")
	r.Git("gc", "--prune=now", "--quiet")
	if got := r.Git("cat-file", "-t", pending.Proposal.Sealed.After); got != "tree" {
		t.Errorf("the pending proposal's tree: %q", got)
	}
	if out, err := gitxtest.GitErr(t, r.Dir, "cat-file", "-t", rejected.Proposal.Sealed.After); err == nil && strings.TrimSpace(out) == "tree" {
		t.Error("the rejected proposal's tree is still kept past its retention")
	}
}

// TestTendRestorePoints_App_RemovesPastRetention: the app's hourly tend
// also removes the restore points past restorePointRetention, keeping
// each repository's newest, and folds those it keeps into one ref; the
// journal still records the execution whose restore point went.
func TestTendRestorePoints_App_RemovesPastRetention(t *testing.T) {
	cfg := isolate(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg.AllowedRoots = []string{root}
	r := gitxtest.InitAt(t, filepath.Join(root, "repo"))
	// The person's identity, which approved commits use.
	r.Git("config", "user.name", "Ada")
	r.Git("config", "user.email", "ada@example.com")
	r.WriteCommit("a.txt", "one\n", "base")
	a, err := Start(cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	ctx := context.Background()
	var ids []string
	for i := range apply.RestorePointsKeptAtLeast + 1 {
		name := fmt.Sprintf("f%d.txt", i)
		r.Write(name, fmt.Sprintf("execution %d\n", i))
		args := &proposal.CommitArgs{Message: name, Paths: []string{name}}
		now := time.Now()
		p := proposal.Proposal{ID: fmt.Sprintf("rp-%02d", i), Op: args.Op(), Repo: r.Dir, Args: args, Reason: "test", Agent: "agent-a",
			Pinned: proposal.Pinned{Refs: map[string]string{}}, CreatedAt: proposal.At(now), ExpiresAt: proposal.At(now.Add(time.Hour))}
		for _, ref := range args.Pins() {
			p.Pinned.Refs[ref] = r.Git("rev-parse", ref)
		}
		if p.Sealed, err = a.executor.Seal(ctx, p); err != nil {
			t.Fatal(err)
		}
		if err := p.Seal(); err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.journal.Submit(p); err != nil {
			t.Fatal(err)
		}
		if _, err := a.journal.Approve(p.ID, p.Digest, "owner:web", ""); err != nil {
			t.Fatal(err)
		}
		// The app runs an approved proposal at once.
		var rec journal.Record
		waitFor(t, time.Minute, p.ID+" to complete", func() bool {
			rec, err = a.journal.Get(p.ID)
			return err == nil && rec.State.Terminal()
		})
		if rec.State != proposal.Completed {
			t.Fatalf("execute %s: %s", p.ID, rec.State)
		}
		ids = append(ids, rec.Outcome.RestorePoint)
	}
	listed := func() map[string]bool {
		list, err := a.executor.ListRestorePoints(ctx, r.Dir)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, rp := range list {
			out[rp.ID] = true
		}
		return out
	}
	// Within the retention every restore point stays, folded into one
	// ref: none is left as refs of its own.
	a.tendSealedOnce(ctx, time.Now())
	if !listed()[ids[0]] {
		t.Fatal("a restore point within its retention was removed")
	}
	if loose := r.Git("for-each-ref", "--format=%(refname)", apply.RestorePrefix); loose != "" {
		t.Errorf("restore points within their retention still have refs of their own: %q", loose)
	}
	if r.Git("for-each-ref", "--format=%(refname)", restorepoint.FoldedRef) == "" {
		t.Error("no folded restore points ref")
	}
	a.tendSealedOnce(ctx, time.Now().Add(config.DefaultRestorePointRetention+time.Hour))
	now := listed()
	if now[ids[0]] {
		t.Errorf("the oldest restore point past its retention is still listed")
	}
	for _, id := range ids[1:] {
		if !now[id] {
			t.Errorf("restore point %s, one of the newest, was removed", id)
		}
	}
	if rec, err := a.journal.Get(ids[0]); err != nil || rec.State != proposal.Completed {
		t.Errorf("the journal's record of %s: %s %v", ids[0], rec.State, err)
	}
}
