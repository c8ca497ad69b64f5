//go:build unix

package workspace

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/config"
)

// TestSeal_PathsTheAppRefuses_StaysOpen: a run creates names no proposal
// may carry (a backslash, a byte that is not UTF-8, a directory named
// .gitmodules). The seal refuses with a finding for each before it seals
// anything: the workspace stays open, an edit works, nothing was handed
// off; once the run's files are gone the seal goes through.
func TestSeal_PathsTheAppRefuses_StaysOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newManager(t, true)
	w, repo := createRepoWS(t, m)
	mustRun(t, m, w.ID, RunRequest{Argv: []string{"sh", "-c",
		`printf x > 'a\b' && printf x > "$(printf 'n\377')" && mkdir .gitmodules && printf x > .gitmodules/x`}})
	res, err := m.Seal(ctx, w.ID, "hostile names")
	if err != nil || !res.Refused {
		t.Fatalf("Seal: %+v %v", res, err)
	}
	var rules []string
	for _, f := range res.Findings {
		if f.Severity == SeverityRefuse {
			rules = append(rules, f.Rule+" "+f.Path)
		}
	}
	for _, want := range []string{`path-backslash a\b`, "path-encoding n\xff", "gitmodules-directory .gitmodules/x"} {
		if !slices.Contains(rules, want) {
			t.Errorf("no refusal %q in %q", want, rules)
		}
	}
	got, err := m.Get(w.ID)
	if err != nil || got.State != StateReady {
		t.Fatalf("a refused seal closed the workspace: %+v %v", got, err)
	}
	if _, err := m.WriteFile(ctx, w.ID, "fixed.txt", []byte("ok\n"), 0); err != nil {
		t.Fatalf("an edit after the refused seal: %v", err)
	}
	if refs := git(t, repo, "for-each-ref", "refs/sluice/"); refs != "" {
		t.Fatalf("a refused seal left refs in the person's repository: %q", refs)
	}
	mustRun(t, m, w.ID, RunRequest{Argv: []string{"sh", "-c", `rm -rf 'a\b' "$(printf 'n\377')" .gitmodules`}})
	res, err = m.Seal(ctx, w.ID, "fixed")
	if err != nil || res.Refused {
		t.Fatalf("Seal after the fix: %+v %v", res, err)
	}
	if _, err := m.FetchInto(ctx, w.ID, repo, "refs/sluice/proposals/"+w.ID); err != nil {
		t.Fatalf("FetchInto after the fix: %v", err)
	}
}

// TestSeal_OwnPlaces_Refused: a workspace change to the policy file of
// the repository it came from (the person keeps it there) is refused at
// the seal, as its proposal would be at the app.
func TestSeal_OwnPlaces_Refused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo, _ := makeRepo(t)
	cfg := &config.Config{PolicyFile: filepath.Join(repo, "policy.json")}
	m := newManager(t, false, func(o *Options) { o.OwnPlaces = cfg.OwnPlaces() })
	w, err := m.Create(ctx, CreateRequest{Source: Source{Kind: SourceRepo, Path: repo}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.WriteFile(ctx, w.ID, "policy.json", []byte(`{"version": 1, "rules": [{"agent": "a"}]}`), 0); err != nil {
		t.Fatal(err)
	}
	res, err := m.Seal(ctx, w.ID, "trust me")
	if err != nil || !res.Refused || len(res.Findings) != 1 || res.Findings[0].Rule != "sluice-configuration" || !strings.Contains(res.Findings[0].Detail, "only you can change it") {
		t.Fatalf("Seal: %+v %v", res, err)
	}
	if got, _ := m.Get(w.ID); got.State != StateReady {
		t.Fatalf("state %s", got.State)
	}
}

// TestUnsealRemoveHandoff: a handoff the app refused after the fetch is
// taken back: the ref that still points at the workspace's head goes, the
// workspace opens for edits again; a ref moved elsewhere is left alone.
func TestUnsealRemoveHandoff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newManager(t, false)
	w, repo := createRepoWS(t, m)
	if _, err := m.WriteFile(ctx, w.ID, "new.txt", []byte("x\n"), 0); err != nil {
		t.Fatal(err)
	}
	if res, err := m.Seal(ctx, w.ID, "change"); err != nil || res.Refused {
		t.Fatalf("Seal: %+v %v", res, err)
	}
	ref := "refs/sluice/proposals/" + w.ID
	if _, err := m.FetchInto(ctx, w.ID, repo, ref); err != nil {
		t.Fatal(err)
	}
	if err := m.RemoveHandoff(ctx, w.ID, repo, ref); err != nil {
		t.Fatal(err)
	}
	if err := m.Unseal(w.ID); err != nil {
		t.Fatal(err)
	}
	if refs := git(t, repo, "for-each-ref", "refs/sluice/"); refs != "" {
		t.Fatalf("the handoff ref stayed: %q", refs)
	}
	if _, err := m.WriteFile(ctx, w.ID, "more.txt", []byte("y\n"), 0); err != nil {
		t.Fatalf("an edit after unsealing: %v", err)
	}
	// A ref of that name pointing elsewhere is not the handoff's.
	git(t, repo, "update-ref", ref, "HEAD")
	if err := m.RemoveHandoff(ctx, w.ID, repo, ref); err != nil {
		t.Fatal(err)
	}
	if refs := git(t, repo, "for-each-ref", "--format=%(refname)", "refs/sluice/"); refs != ref {
		t.Fatalf("a ref Sluice did not make was removed: %q", refs)
	}
	if err := os.RemoveAll(filepath.Join(repo, ".git", "refs", "sluice")); err != nil {
		t.Fatal(err)
	}
}
