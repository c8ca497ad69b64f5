package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestProposalDiff_FirstChunkIsAboutAScreen: the first chunk of a large
// card's diff is about a screen of it, whole lines, so the browser draws
// the first files without highlighting a hundred others first; the chunks
// after it still add up to the whole diff.
func TestProposalDiff_FirstChunkIsAboutAScreen(t *testing.T) {
	a, repo, env := flowEnv(t)
	for i := range 1000 {
		p := filepath.Join(repo, fmt.Sprintf("src/pkg%02d/file%04d.txt", i%50, i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, fmt.Appendf(nil, "file %d\nline two\nline three\n", i), 0o644)
	}
	cs := agentSession(t, env, "claude-code")
	out, isErr := callTool(t, cs, "propose_commit", map[string]any{
		"repoPath": repo, "reason": "Codemod", "message": "1,000 files", "stageAll": true,
	})
	if isErr {
		t.Fatalf("propose_commit: %v", out)
	}
	id := out["proposalId"].(string)
	api := &API{app: a, kind: "web"}
	first, err := api.ProposalDiff(id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Text) > 8<<10 || !strings.HasPrefix(first.Text, "diff --git ") || !strings.HasSuffix(first.Text, "\n") {
		t.Errorf("first chunk: %d bytes, want a screen's worth (at most 8 KiB) of whole lines from the first file", len(first.Text))
	}
	if first.Done || first.TotalBytes < 100<<10 {
		t.Fatalf("the diff of 1,000 files is %d bytes in all (done %v)", first.TotalBytes, first.Done)
	}
	whole := wholeDiff(t, api, id)
	if len(whole) != first.TotalBytes || !strings.HasPrefix(whole, first.Text) || strings.Count(whole, "diff --git ") != 1000 {
		t.Errorf("the chunks add up to %d bytes and %d files, want %d bytes and 1,000 files", len(whole), strings.Count(whole, "diff --git "), first.TotalBytes)
	}
}

// TestCardDiff_ConcurrentRequests_OneComputation: the requests that need a
// card's diff at the same moment (the queue's flags, the card's first
// chunk, another tab) share one computation of it.
func TestCardDiff_ConcurrentRequests_OneComputation(t *testing.T) {
	a, repo, env := flowEnv(t)
	for i := range 200 {
		p := filepath.Join(repo, fmt.Sprintf("src/file%03d.txt", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, fmt.Appendf(nil, "file %d\n", i), 0o644)
	}
	cs := agentSession(t, env, "claude-code")
	out, isErr := callTool(t, cs, "propose_commit", map[string]any{
		"repoPath": repo, "reason": "Files", "message": "200 files", "stageAll": true,
	})
	if isErr {
		t.Fatalf("propose_commit: %v", out)
	}
	rec, err := a.record(out["proposalId"].(string))
	if err != nil {
		t.Fatal(err)
	}
	a.diffs = diffCache{}
	const n = 8
	got := make([]*proposalDiff, n)
	var start, done sync.WaitGroup
	start.Add(1)
	for i := range n {
		done.Go(func() {
			start.Wait()
			d, err := a.cardDiff(rec.Proposal)
			if err != nil {
				t.Error(err)
			}
			got[i] = d
		})
	}
	start.Done()
	done.Wait()
	for i, d := range got {
		if d == nil || d != got[0] {
			t.Fatalf("request %d got a diff of its own: the diff was computed more than once", i)
		}
	}
}
