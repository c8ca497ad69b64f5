package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A policy file inside an allowed root could be rewritten by an agent's
// proposal, and its rules would then approve that agent's proposals: the
// app refuses to start with one, naming both and what to do.
func TestLoad_PolicyFileInsideRoot_Refused(t *testing.T) {
	dir := isolate(t)
	root := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	for _, policy := range []string{filepath.Join(root, "repo", "policy.json"), filepath.Join(link, "policy.json")} {
		b, _ := json.Marshal(map[string]any{"allowedRoots": []string{root}, "policyFile": policy})
		writeConfig(t, dir, string(b))
		_, err := Load()
		if !errors.Is(err, ErrPolicyInRoot) || !errors.Is(err, ErrInvalid) {
			t.Fatalf("policy %s: Load = %v, want ErrPolicyInRoot", policy, err)
		}
		if !strings.Contains(err.Error(), policy) || !strings.Contains(err.Error(), "move the policy file out of the root") {
			t.Errorf("the reason does not say which file and what to do: %v", err)
		}
	}
	// Outside the root, or in Sluice's own config directory (protected as
	// a whole) even when a root holds that directory, it starts.
	b, _ := json.Marshal(map[string]any{"allowedRoots": []string{root}, "policyFile": filepath.Join(t.TempDir(), "policy.json")})
	writeConfig(t, dir, string(b))
	if _, err := Load(); err != nil {
		t.Fatalf("policy outside the root: %v", err)
	}
	home := filepath.Dir(filepath.Dir(dir))
	b, _ = json.Marshal(map[string]any{"allowedRoots": []string{home}, "policyFile": filepath.Join(dir, "policy.json")})
	writeConfig(t, dir, string(b))
	if _, err := Load(); err != nil {
		t.Fatalf("policy in the config directory under a root: %v", err)
	}
}

// Settings and the CLI refuse to set a policy file inside a root, and to
// add a root that contains the configured policy file; nothing is written.
func TestSettings_PolicyFileAndRoots_RefuseTheOneInTheOther(t *testing.T) {
	dir := isolate(t)
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "policy.json")
	b, _ := json.Marshal(map[string]any{"allowedRoots": []string{root}})
	writeConfig(t, dir, string(b))
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(c.File())
	inside := filepath.Join(root, "policy.json")
	if err := c.SavePolicyFile(inside); !errors.Is(err, ErrPolicyInRoot) {
		t.Fatalf("SavePolicyFile inside a root = %v", err)
	}
	s := c.Settings()
	s.PolicyFile = inside
	if err := c.SaveSettings(s); !errors.Is(err, ErrPolicyInRoot) {
		t.Fatalf("SaveSettings with the policy inside a root = %v", err)
	}
	if after, _ := os.ReadFile(c.File()); string(after) != string(before) {
		t.Fatalf("config.json changed:\n%s", after)
	}
	if err := c.SavePolicyFile(outside); err != nil {
		t.Fatal(err)
	}
	c.PolicyFile = outside
	before, _ = os.ReadFile(c.File())
	if _, err := c.AddRoot(filepath.Dir(outside)); !errors.Is(err, ErrPolicyInRoot) {
		t.Fatalf("AddRoot around the policy file = %v", err)
	}
	if _, err := c.AddRoot(filepath.Dir(filepath.Dir(outside))); !errors.Is(err, ErrPolicyInRoot) {
		t.Fatalf("AddRoot above the policy file = %v", err)
	}
	if after, _ := os.ReadFile(c.File()); string(after) != string(before) {
		t.Fatalf("config.json changed:\n%s", after)
	}
	if _, err := c.AddRoot(t.TempDir()); err != nil {
		t.Fatalf("an unrelated root: %v", err)
	}
}

func TestPlaces_Contains_CanonicalAndNotYetExisting(t *testing.T) {
	dir := isolate(t)
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureDirs(); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(t.TempDir(), "rules", "policy.json")
	c.PolicyFile = policy
	// A repository that reaches the config directory through a symlink.
	repo := t.TempDir()
	if err := os.Symlink(filepath.Dir(dir), filepath.Join(repo, "cfg")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(policy), filepath.Join(repo, "rules")); err != nil {
		t.Fatal(err)
	}
	p := c.OwnPlaces()
	for _, rel := range []string{"cfg/sluice/config.json", "cfg/sluice/new/file", "rules/policy.json"} {
		if err := p.Check(repo, rel); !errors.Is(err, ErrOwnPlace) || !strings.Contains(err.Error(), rel) || !strings.Contains(err.Error(), "only you can change it") {
			t.Errorf("Check(%s) = %v", rel, err)
		}
	}
	for _, abs := range []string{c.File(), c.JournalFile(), filepath.Join(c.WorkspaceDir(), "w1", "tree", "x"), c.AuditKeyFile, c.AuditPublicKeyFile(), policy} {
		if _, ok := p.Contains(abs); !ok {
			t.Errorf("%s is not one of Sluice's places", abs)
		}
	}
	for _, rel := range []string{"rules/other.json", "cfg/other", "src/main.go"} {
		if err := p.Check(repo, rel); err != nil {
			t.Errorf("Check(%s) = %v", rel, err)
		}
	}
}

// TestPlacesChecker_Contains_SameAsPlaces: the Checker, which resolves
// each directory once for a proposal's many paths, answers as Contains
// for every kind of path: files in a directory reached through a symlink
// (existing, and not yet existing), a file that is itself a symlink into
// Sluice's places, a dangling symlink, files of plain directories, and
// the same directory asked again after a file in it was answered.
func TestPlacesChecker_Contains_SameAsPlaces(t *testing.T) {
	dir := isolate(t)
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureDirs(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.File(), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	for _, d := range []string{"src/pkg", "docs"} {
		if err := os.MkdirAll(filepath.Join(repo, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"src/pkg/a.go", "src/pkg/b.go", "docs/README.md"} {
		if err := os.WriteFile(filepath.Join(repo, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"cfg":          filepath.Dir(dir),                               // a directory of Sluice's
		"src/conf":     c.File(),                                        // a file of Sluice's
		"src/gone":     filepath.Join(filepath.Dir(dir), "sluice", "x"), // dangling, into Sluice's
		"docs/outside": t.TempDir(),                                     // somewhere else
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(repo, name)); err != nil {
			t.Fatal(err)
		}
	}
	p := c.OwnPlaces()
	chk := p.Checker()
	rels := []string{
		"src/pkg/a.go", "src/pkg/b.go", "docs/README.md", "src/pkg/new.go",
		"cfg/sluice/config.json", "cfg/sluice/new/file", "cfg/other",
		"src/conf", "src/gone", "docs/outside", "docs/outside/x",
		"cfg/sluice/config.json", "src/pkg/a.go", "", ".", "../escape",
	}
	refused := 0
	for _, rel := range rels {
		abs := filepath.Join(repo, filepath.FromSlash(rel))
		wantPlace, want := p.Contains(abs)
		gotPlace, got := chk.Contains(abs)
		if got != want || gotPlace != wantPlace {
			t.Errorf("%s: the Checker says (%q, %v), Contains (%q, %v)", rel, gotPlace, got, wantPlace, want)
		}
		if got {
			refused++
		}
	}
	if refused != 5 {
		t.Errorf("%d paths are Sluice's, want 5 (cfg/sluice twice, its new file, src/conf, src/gone)", refused)
	}
	if _, ok := chk.Contains("relative/path"); ok {
		t.Error("a relative path is not one of Sluice's places")
	}
}
