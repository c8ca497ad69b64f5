package restorepoint

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// A restore point's scope names the paths a restore writes, so List
// refuses a record whose scope reaches outside the working tree or into
// .git, or is not sorted: such a record was not written by Sluice.
func TestList_ScopeOutsideTheWorkingTree_Refused(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := gitxtest.InitAt(t, filepath.Join(root, "repo"))
	r.Write("a.txt", "a\n")
	r.Commit("base")
	head := r.Git("rev-parse", "HEAD")
	tree := r.Git("rev-parse", "HEAD^{tree}")
	record := func(id string, paths []string) {
		rp := RestorePoint{ID: id, Kind: KindProposal, Repo: r.Dir, CreatedAt: time.Now().UTC(), Refs: []RefState{},
			Worktrees: []WorktreeState{{Path: r.Dir, Head: "refs/heads/main", HeadSHA: head, Files: true, Index: tree, Tree: tree, Paths: paths}}}
		js, err := json.Marshal(rp)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("git", "commit-tree", tree)
		cmd.Dir = r.Dir
		cmd.Stdin = strings.NewReader("Sluice restore point " + id + "\n\n" + string(js) + "\n")
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		r.Git("update-ref", RestorePrefix+id+"/meta", strings.TrimSpace(string(out)))
	}
	record("good", []string{"a.txt", "src/b.txt"})
	for id, paths := range map[string][]string{
		"up":       {"../outside.txt"},
		"absolute": {"/etc/passwd"},
		"gitdir":   {".git/config"},
		"nested":   {"sub/.GIT/hooks/pre-commit"},
		"unclean":  {"src//b.txt"},
		"unsorted": {"src/b.txt", "a.txt"},
		"repeated": {"a.txt", "a.txt"},
	} {
		record(id, paths)
	}

	runner, err := gitx.NewRunner(gitx.RunnerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := runner.Open(context.Background(), gitx.Roots{root}, r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	list, err := List(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, rp := range list {
		ids = append(ids, rp.ID)
	}
	if strings.Join(ids, ",") != "good" {
		t.Errorf("listed %q: want only the restore point whose scope stays inside the working tree", ids)
	}
}
