package sidecar

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/journal"
)

// TestGitTools_AlternateOutsideRoots: a repository inside the roots that
// borrows its objects from a store outside them (a `git clone --shared`
// of an outside repository) is refused by every read, commit_details and
// diff_text of a commit that exists only outside included, and nothing
// of the outside repository is named or shown.
func TestGitTools_AlternateOutsideRoots(t *testing.T) {
	f := gitxtest.NewAlternateOutside(t)
	cs := gitSession(t, f.Root)
	for tool, args := range map[string]map[string]any{
		"commit_details": {"repoPath": f.Inside.Dir, "rev": f.Secret},
		"diff_text":      {"repoPath": f.Inside.Dir, "base": f.Secret + "~1", "target": f.Secret},
		"diff_semantic":  {"repoPath": f.Inside.Dir, "base": f.Secret + "~1", "target": f.Secret},
		"repo_history":   {"repoPath": f.Inside.Dir},
		"repo_brief":     {"repoPath": f.Inside.Dir},
	} {
		res := gitCall(t, cs, tool, args)
		text := gitResultText(res)
		if gitErrorCode(res) != errcode.PathOutsideRoots || strings.Contains(text, "outside secret") || strings.Contains(text, f.Outside.Dir) {
			t.Errorf("%s through an outside alternate: %s", tool, text)
		}
	}
	// Where the store is allowed, the same read works.
	both := gitSession(t, filepath.Dir(f.Root))
	if res := gitCall(t, both, "commit_details", map[string]any{"repoPath": f.Inside.Dir, "rev": f.Secret}); res.IsError {
		t.Fatalf("commit_details with the store inside the roots: %s", gitResultText(res))
	}
}

// TestPropose_AlternateOutsideRoots: a branch at a commit that exists only
// in an object store outside the roots is refused, and no proposal is
// stored.
func TestPropose_AlternateOutsideRoots(t *testing.T) {
	e := newProposeEnv(t, envOpt{})
	outside := t.TempDir()
	e.git(outside, "init", "-q")
	e.git(outside, "commit", "-q", "--allow-empty", "-m", "outside")
	secret := e.git(outside, "rev-parse", "HEAD")
	e.git(e.root, "clone", "-q", "--shared", outside, "borrowing")
	borrowing := filepath.Join(e.root, "borrowing")
	res, out := call(t, e.cs, "propose_branch", map[string]any{"repoPath": borrowing, "reason": "r", "name": "agent/at-outside", "startPoint": secret})
	if !res.IsError || gitErrorCode(res) != errcode.PathOutsideRoots || out.ProposalID != "" {
		t.Fatalf("propose_branch through an outside alternate: %s", resultText(res))
	}
	if list, err := e.j.List(journal.Filter{}); err != nil || len(list) != 0 {
		t.Fatalf("a proposal was stored: %v %v", list, err)
	}
}
