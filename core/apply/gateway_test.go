package apply_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/apply"
	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/intake"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// TestGateway_RestorePoints_FromTheExecutor: a sidecar asks the real
// gateway for restore points; the executor took one for the proposal it
// ran, and the route lists it.
func TestGateway_RestorePoints_FromTheExecutor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	repo := gitxtest.InitAt(t, filepath.Join(root, "repo"))
	main := repo.WriteCommit("a.txt", "a\n", "base")

	j, err := journal.Open(filepath.Join(t.TempDir(), "journal.db"), journal.Options{Recorder: journal.RecorderFunc(func(journal.Event) error { return nil })})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	runner, err := gitx.NewRunner(gitx.RunnerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := apply.New(apply.Options{Journal: j, Roots: gitx.Roots{root}, Runner: runner, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	token, _ := gateway.NewToken()
	srv, err := gateway.Listen(gateway.Options{Token: token, AppVersion: "test", Logger: quiet,
		Backend: intake.New(j, intake.Options{Roots: gitx.Roots{root}, Logger: quiet, RestorePoints: e, Sealer: e})})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	defer srv.Shutdown(context.Background())
	client, err := gateway.NewClient(srv.Addr(), token)
	if err != nil {
		t.Fatal(err)
	}

	now := time.Now()
	p := proposal.Proposal{ID: "gw-restore-1", Op: proposal.OpBranch, Repo: repo.Dir, Agent: "agent-a", Reason: "a branch",
		Args:      &proposal.BranchArgs{Name: "topic", StartPoint: "main"},
		Pinned:    proposal.Pinned{Refs: map[string]string{"main": main}},
		CreatedAt: proposal.At(now), ExpiresAt: proposal.At(now.Add(10 * time.Minute))}
	if err := p.Seal(); err != nil {
		t.Fatal(err)
	}
	if _, err := client.SubmitProposal(ctx, "agent-a", p); err != nil {
		t.Fatal(err)
	}
	// The app sealed the outcome on arrival: the card's digest is the
	// stored one.
	stored, err := j.Get(p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Approve(p.ID, stored.Proposal.Digest, "pat", ""); err != nil {
		t.Fatal(err)
	}
	if rec, err := e.Execute(ctx, p.ID); err != nil || rec.State != proposal.Completed {
		t.Fatalf("execute: %s %v", rec.State, err)
	}

	for _, asked := range []string{repo.Dir, ""} {
		rp, err := client.RestorePoints(ctx, "agent-a", asked)
		if err != nil {
			t.Fatalf("RestorePoints(%q): %v", asked, err)
		}
		if !rp.Supported || len(rp.RestorePoints) != 1 {
			t.Fatalf("RestorePoints(%q) = %+v", asked, rp)
		}
		got := rp.RestorePoints[0]
		if got.ID != p.ID || got.ProposalID != p.ID || got.Repo != repo.Dir || got.CreatedAt == "" {
			t.Errorf("restore point %+v", got)
		}
		if sha, ok := got.Refs["refs/heads/topic"]; !ok || sha != "" {
			t.Errorf("refs %v: topic did not exist before", got.Refs)
		}
	}
	outside, _ := filepath.EvalSymlinks(t.TempDir())
	if _, err := client.RestorePoints(ctx, "agent-a", outside); err == nil {
		t.Errorf("a repository outside the roots was listed")
	}
}
