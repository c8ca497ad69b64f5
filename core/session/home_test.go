package session

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/connect"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// mkfile writes content at dir/rel, its directories made.
func mkfile(t *testing.T, dir, rel, content string) string {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func agentNamed(t *testing.T, name string) *connect.Agent {
	t.Helper()
	a, ok := connect.AgentByName(name)
	if !ok {
		t.Fatalf("%s is not in the client table", name)
	}
	return &a
}

// Links the agent planted in its confined HOME name, outside the sandbox
// where PrepareHome runs as the person, the person's own files: a project's
// package.json, their real ~/.gemini, a TOML file with a token, their
// ~/.gitconfig. Preparing the home writes none of them, creates nothing
// beside them, and brings none of their bytes into the home; the links
// are replaced by the home's own files.
func TestPrepareHome_PlantedLinks_NeverFollowed(t *testing.T) {
	outside := t.TempDir()
	pkg := mkfile(t, outside, "shop/package.json", `{"name": "shop", "note": "OUTSIDE-PKG"}`+"\n")
	mkfile(t, outside, "gemini/settings.json", `{"note": "OUTSIDE-GEMINI"}`+"\n")
	mkfile(t, outside, "codex/config.toml", "token = \"OUTSIDE-TOML\"\n")
	copilotCfg := mkfile(t, outside, "copilot-config.json", `{"note": "OUTSIDE-COPILOT"}`+"\n")
	gitcfg := mkfile(t, outside, "gitconfig", "[user]\n\tname = OUTSIDE-GIT\n")
	qwen := filepath.Join(outside, "qwen")
	if err := os.Mkdir(qwen, 0o700); err != nil {
		t.Fatal(err)
	}

	home := filepath.Join(t.TempDir(), "homes", "claude-code")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	// Absolute links and a relative one that climbs out; a link at a
	// ConfigPath, one at a file inside a real ConfigPath directory.
	symlink(t, pkg, filepath.Join(home, ".claude.json"))
	symlink(t, filepath.Join(outside, "gemini"), filepath.Join(home, ".gemini"))
	symlink(t, filepath.Join(outside, "codex"), filepath.Join(home, ".codex"))
	symlink(t, copilotCfg, filepath.Join(home, ".copilot", "config.json"))
	rel, err := filepath.Rel(home, qwen)
	if err != nil {
		t.Fatal(err)
	}
	symlink(t, rel, filepath.Join(home, ".qwen"))
	symlink(t, gitcfg, filepath.Join(home, ".gitconfig"))
	before := gitxtest.Snapshot(t, outside)

	repo := "/home/p/src/shop"
	for _, name := range []string{"claude", "gemini", "codex", "copilot", "qwen"} {
		if err := PrepareHome(home, agentNamed(t, name), nil, repo, Identity{Name: "Pat", Email: "pat@example.com"}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if d := gitxtest.DiffSnapshots(before, gitxtest.Snapshot(t, outside)); len(d) > 0 {
		t.Fatalf("preparing the confined home changed the person's files: %v", d)
	}
	for rel, want := range map[string]string{
		".claude.json":                `"sluice"`,
		".gemini/settings.json":       `"sluice"`,
		".gemini/trustedFolders.json": repo,
		".codex/config.toml":          "[mcp_servers.sluice]",
		".copilot/config.json":        repo,
		".qwen/settings.json":         `"sluice"`,
		".gitconfig":                  "Pat",
	} {
		p := filepath.Join(home, rel)
		st, err := os.Lstat(p)
		if err != nil || !st.Mode().IsRegular() {
			t.Errorf("%s is not a regular file of the home's: %v %v", rel, st, err)
			continue
		}
		if b, _ := os.ReadFile(p); !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %q:\n%s", rel, want, b)
		}
	}
	err = filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			t.Errorf("a link is left in the home: %s", p)
		}
		if d.Type().IsRegular() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), "OUTSIDE") {
				t.Errorf("%s holds bytes of the person's file:\n%s", p, b)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
