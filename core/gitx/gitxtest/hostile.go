package gitxtest

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Hooks are every hook name git knows (githooks(5)); the hostile fixture
// installs all of them.
var Hooks = []string{
	"applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
	"prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge",
	"pre-push", "pre-receive", "update", "proc-receive", "post-receive", "post-update",
	"reference-transaction", "push-to-checkout", "pre-auto-gc", "post-rewrite", "sendemail-validate",
	"fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist", "p4-post-changelist", "p4-pre-submit",
	"post-index-change",
}

// Hostile is a repository whose configuration points every program git
// can be made to run at a script that leaves a marker file in Markers.
type Hostile struct {
	*Repo
	// Markers is where the scripts write; it must stay empty.
	Markers string
	// Feature is a branch whose merge into main conflicts in every
	// driver-selected file.
	Feature string
}

// MarkerFiles lists what the hostile scripts left behind.
func (h *Hostile) MarkerFiles(t testing.TB) []string {
	t.Helper()
	entries, err := os.ReadDir(h.Markers)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(h.Markers, e.Name()))
		names = append(names, e.Name()+": "+strings.TrimSpace(string(b)))
	}
	sort.Strings(names)
	return names
}

// NewHostile builds the repository with a clean configuration, leaves the
// working tree dirty in the driver-selected files (so that status and diff
// would have to run filters and textconv), then arms the configuration.
func NewHostile(t testing.TB) *Hostile {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := &Hostile{Markers: filepath.Join(base, "markers"), Feature: "feature"}
	for _, d := range []string{h.Markers, filepath.Join(base, "hooks")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := func(name string) string {
		p := filepath.Join(base, "bin", name)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		body := fmt.Sprintf("#!/bin/sh\necho \"$0 $*\" >> %q\ncat 2>/dev/null\nexit 0\n", filepath.Join(h.Markers, name))
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	r := InitAt(t, filepath.Join(base, "repo"))
	h.Repo = r
	r.Write(".gitattributes", "*.dat filter=evil\n*.tc diff=evil\n*.m merge=evil\n")
	r.Write("filtered.dat", "plain one\nplain two\n")
	r.Write("conv.tc", "text one\ntext two\n")
	r.Write("merge.m", "m one\nm two\n")
	r.Write("code.go", "package x\n\nfunc A() int { return 1 }\n")
	r.Write("README.md", "hostile\n")
	r.Commit("base")
	r.Git("checkout", "-q", "-b", h.Feature)
	r.Write("filtered.dat", "feature one\nplain two\n")
	r.Write("conv.tc", "feature one\ntext two\n")
	r.Write("merge.m", "feature m\nm two\n")
	r.Write("code.go", "package x\n\nfunc A() int { return 2 }\n\nfunc B() {}\n")
	r.Commit("feature changes")
	r.Git("checkout", "-q", "main")
	r.Write("filtered.dat", "main one\nplain two\n")
	r.Write("conv.tc", "main one\ntext two\n")
	r.Write("merge.m", "main m\nm two\n")
	r.Commit("main changes")
	r.Write("README.md", "stash me\n")
	r.Git("stash", "push", "-q", "-m", "hostile stash")
	// Dirty tracked files that only a filter or textconv could compare.
	r.Write("filtered.dat", "worktree one\nplain two\n")
	r.Write("conv.tc", "worktree one\ntext two\n")
	r.Write("code.go", "package x\n\nfunc A() int { return 3 }\n")
	r.Write("untracked.dat", "new\n")

	hooks := filepath.Join(base, "hooks")
	for _, name := range Hooks {
		src := script("hook-" + name)
		for _, dir := range []string{hooks, filepath.Join(r.Dir, ".git", "hooks")} {
			if err := os.WriteFile(filepath.Join(dir, name), mustRead(t, src), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg := [][2]string{
		{"core.fsmonitor", script("fsmonitor")},
		{"core.pager", script("pager")},
		{"pager.diff", script("pager-diff")},
		{"pager.log", script("pager-log")},
		{"pager.show", script("pager-show")},
		{"pager.status", script("pager-status")},
		{"diff.external", script("diff-external")},
		{"diff.evil.textconv", script("textconv")},
		{"diff.evil.command", script("diff-command")},
		{"filter.evil.clean", script("filter-clean")},
		{"filter.evil.smudge", script("filter-smudge")},
		{"filter.evil.process", script("filter-process")},
		{"filter.evil.required", "true"},
		{"merge.evil.driver", script("merge-driver") + " %O %A %B"},
		{"core.hooksPath", hooks},
		{"core.sshCommand", script("ssh-command")},
		{"core.askPass", script("askpass")},
		{"credential.helper", script("credential-helper")},
		{"core.editor", script("editor")},
		{"sequence.editor", script("sequence-editor")},
		{"gpg.program", script("gpg")},
		{"gpg.ssh.program", script("gpg-ssh")},
		{"log.showSignature", "true"},
		{"core.alternateRefsCommand", script("alternate-refs")},
		{"uploadpack.packObjectsHook", script("pack-objects-hook")},
		{"remote.origin.url", "ext::" + script("ext-transport") + " %S"},
		{"remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"},
		{"remote.token.url", "https://ghp_SECRET_TOKEN@example.com/x.git"},
		{"diff.noprefix", "true"},
		{"diff.relative", "true"},
		{"color.ui", "always"},
		{"status.submoduleSummary", "true"},
	}
	for _, kv := range cfg {
		r.Git("config", kv[0], kv[1])
	}
	return h
}

func mustRead(t testing.TB, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// HostileEnv are variables a hostile environment could carry; the runner
// must drop all of them.
func HostileEnv(h *Hostile) map[string]string {
	evil := filepath.Join(filepath.Dir(h.Markers), "bin", "env-evil")
	_ = os.WriteFile(evil, []byte(fmt.Sprintf("#!/bin/sh\necho \"$0 $*\" >> %q\nexit 0\n", filepath.Join(h.Markers, "env"))), 0o755)
	return map[string]string{
		"GIT_DIR":               filepath.Join(h.Markers, "nowhere"),
		"GIT_WORK_TREE":         h.Markers,
		"GIT_INDEX_FILE":        filepath.Join(h.Markers, "index"),
		"GIT_EXTERNAL_DIFF":     evil,
		"GIT_PAGER":             evil,
		"PAGER":                 evil,
		"GIT_SSH":               evil,
		"GIT_SSH_COMMAND":       evil,
		"GIT_ASKPASS":           evil,
		"SSH_ASKPASS":           evil,
		"GIT_EDITOR":            evil,
		"GIT_CONFIG_COUNT":      "1",
		"GIT_CONFIG_KEY_0":      "core.fsmonitor",
		"GIT_CONFIG_VALUE_0":    evil,
		"GIT_CONFIG_PARAMETERS": "'diff.external'='" + evil + "'",
		"GIT_CONFIG_GLOBAL":     filepath.Join(h.Markers, "global"),
		"GIT_EXEC_PATH":         filepath.Join(h.Markers, "exec"),
		"GIT_TRACE":             filepath.Join(h.Markers, "trace"),
	}
}
