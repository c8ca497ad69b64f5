package sidecar

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// gitSession runs an in-process sidecar with only the git toolset and the
// given allowed roots, behind the go-sdk client.
// readToolsets are every read-only toolset: git, and the fleet and safety
// tools that sessions enable when they need them.
var readToolsets = []string{"git", "fleet", "safety"}

func gitSession(t *testing.T, roots ...string) *mcp.ClientSession {
	t.Helper()
	_, cfg := testEnv(t, roots...)
	s, err := New(Options{Config: cfg, Toolsets: readToolsets})
	if err != nil {
		t.Fatal(err)
	}
	return connectInMemory(t, s)
}

func gitCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	return res
}

// callOK calls a tool that must succeed and decodes its structured result.
func gitCallOK[T any](t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) T {
	t.Helper()
	res := gitCall(t, cs, name, args)
	if res.IsError {
		t.Fatalf("%s(%v) failed: %s", name, args, gitResultText(res))
	}
	return decode[T](t, res)
}

// callErr calls a tool that must fail and returns its structured error.
func gitCallErr(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) ToolError {
	t.Helper()
	res := gitCall(t, cs, name, args)
	if !res.IsError {
		t.Fatalf("%s(%v) succeeded, want an error: %s", name, args, gitResultText(res))
	}
	var out struct {
		Error *ToolError `json:"error"`
	}
	if err := json.Unmarshal([]byte(gitResultText(res)), &out); err != nil || out.Error == nil {
		t.Fatalf("%s: error result is not structured: %s", name, gitResultText(res))
	}
	return *out.Error
}

func gitErrorCode(res *mcp.CallToolResult) errcode.Code {
	var out struct{ Error ToolError }
	_ = json.Unmarshal([]byte(gitResultText(res)), &out)
	return out.Error.Code
}

func gitResultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestGitTools_InMemory_EveryTool(t *testing.T) {
	r := gitxtest.Diverged(t)
	r.Write("shared.go", "package shared\n\nfunc A() int { return 10 }\n\nfunc C() {}\n")
	r.Write("notes.md", "notes\n")
	root := filepath.Dir(r.Dir)
	cs := gitSession(t, root)
	repo := map[string]any{"repoPath": r.Dir}
	with := func(kv ...any) map[string]any {
		m := map[string]any{"repoPath": r.Dir}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}

	brief := gitCallOK[RepoBriefOut](t, cs, "repo_brief", repo)
	if brief.Branch != "main" || brief.Root != r.Dir || brief.Worktree.Unstaged != 1 || brief.Worktree.Untracked != 1 || len(brief.Recent) == 0 {
		t.Errorf("repo_brief: %+v", brief.Brief)
	}
	scope := gitCallOK[RepoScopeOut](t, cs, "repo_scope", repo)
	if scope.TrackedFiles != 3 || scope.AllowedRoot != root || scope.ObjectFormat != "sha1" {
		t.Errorf("repo_scope: %+v", scope.Scope)
	}
	status := gitCallOK[RepoStatusOut](t, cs, "repo_status", with("untracked", "all"))
	if status.Counts.Unstaged != 1 || len(status.Files) != 2 {
		t.Errorf("repo_status: %+v", status.StatusResult)
	}
	refs := gitCallOK[RepoRefsOut](t, cs, "repo_refs", with("kinds", []string{"branches"}))
	if refs.Total != 2 {
		t.Errorf("repo_refs: %+v", refs.RefList)
	}
	stack := gitCallOK[RepoBranchStackOut](t, cs, "repo_branch_stack", with("branch", "feature", "base", "main"))
	if stack.BehindBase != 2 || len(stack.Stack) != 1 || stack.Stack[0].Commits != 2 {
		t.Errorf("repo_branch_stack: %+v", stack.BranchStack)
	}
	hist := gitCallOK[RepoHistoryOut](t, cs, "repo_history", with("limit", 2))
	if len(hist.Commits) != 2 || hist.NextCursor == "" {
		t.Errorf("repo_history: %+v", hist.History)
	}
	page2 := gitCallOK[RepoHistoryOut](t, cs, "repo_history", with("limit", 2, "cursor", hist.NextCursor))
	if len(page2.Commits) != 1 || page2.NextCursor != "" || page2.Head != hist.Head {
		t.Errorf("repo_history page 2: %+v", page2.History)
	}
	reflog := gitCallOK[RepoReflogOut](t, cs, "repo_reflog", repo)
	if len(reflog.Entries) == 0 || reflog.Ref != "HEAD" {
		t.Errorf("repo_reflog: %+v", reflog.Reflog)
	}
	pre := gitCallOK[ConflictPreflightOut](t, cs, "repo_conflict_preflight", with("theirs", "feature"))
	if pre.Outcome != "conflicts" || len(pre.Conflicts) != 1 {
		t.Errorf("repo_conflict_preflight: %+v", pre.Preflight)
	}
	conflict := gitCallOK[ConflictReadOut](t, cs, "conflict_read", repo)
	if conflict.InProgress {
		t.Errorf("conflict_read on a clean repository: %+v", conflict.ConflictState)
	}
	details := gitCallOK[CommitDetailsOut](t, cs, "commit_details", with("rev", "feature"))
	if details.Subject != "feat: feature file" || len(details.Files) != 1 {
		t.Errorf("commit_details: %+v", details.CommitDetails)
	}
	changes := gitCallOK[WorktreeChangesOut](t, cs, "worktree_changes", repo)
	if changes.Unstaged.Files != 1 || changes.Untracked != 1 {
		t.Errorf("worktree_changes: %+v", changes.WorktreeChanges)
	}
	wl := gitCallOK[WorktreeListOut](t, cs, "worktree_list", repo)
	if len(wl.Worktrees) != 1 || !wl.Worktrees[0].Current {
		t.Errorf("worktree_list: %+v", wl.WorktreeList)
	}
	sm := gitCallOK[SubmoduleStatusOut](t, cs, "submodule_status", repo)
	if len(sm.Submodules) != 0 {
		t.Errorf("submodule_status: %+v", sm.SubmoduleList)
	}
	dt := gitCallOK[DiffTextOut](t, cs, "diff_text", with("contextLines", 0))
	if dt.Files != 1 || !strings.Contains(dt.Diff, "+func C() {}") || dt.Truncated {
		t.Errorf("diff_text: %+v", dt.DiffText)
	}
	ds := gitCallOK[DiffSemanticOut](t, cs, "diff_semantic", with("base", "main", "target", "feature", "mergeBase", true))
	if ds.Fallback != 2 || ds.Parsed != 0 {
		t.Errorf("diff_semantic between branches: %+v", ds.SemanticDiff)
	}
	ds = gitCallOK[DiffSemanticOut](t, cs, "diff_semantic", repo)
	if ds.Parsed != 1 || len(ds.Files[0].Changes) != 3 {
		t.Errorf("diff_semantic on the working tree: %+v", ds.SemanticDiff)
	}
	radar := gitCallOK[FleetRadarOut](t, cs, "fleet_radar", map[string]any{})
	if radar.Scanned != 1 || len(radar.NeedsAttention) != 1 {
		t.Errorf("fleet_radar: %+v", radar.Radar)
	}
	digest := gitCallOK[FleetDigestOut](t, cs, "fleet_digest", map[string]any{"since": "2000-01-01"})
	if digest.Scanned != 1 || len(digest.Active) != 1 {
		t.Errorf("fleet_digest: %+v", digest.Digest)
	}
	caps := gitCallOK[CapabilitiesOut](t, cs, "sluice_capabilities", nil)
	if caps.Limits.Git == nil || caps.Limits.Git.DiffMaxBytes != gitx.MaxDiffBytes || caps.Limits.Git.GitVersion == "" || !caps.Features["gitConflictPreflight"] {
		t.Errorf("sluice_capabilities git limits: %+v %+v", caps.Limits.Git, caps.Features)
	}
}

// TestGitTools_Fixtures calls every single-repository tool on each fixture
// and checks what each fixture is about.
func TestGitTools_Fixtures(t *testing.T) {
	fixtures := map[string]func(t *testing.T) string{
		"merge in progress":  func(t *testing.T) string { return gitxtest.MergeInProgress(t).Dir },
		"rebase in progress": func(t *testing.T) string { return gitxtest.RebaseInProgress(t).Dir },
		"detached HEAD":      func(t *testing.T) string { return gitxtest.Detached(t).Dir },
		"submodules":         func(t *testing.T) string { return gitxtest.Submodules(t).Dir },
		"stashes":            func(t *testing.T) string { return gitxtest.Stashes(t).Dir },
		"worktrees":          func(t *testing.T) string { _, linked := gitxtest.Worktrees(t); return linked },
		"binary files":       func(t *testing.T) string { return gitxtest.Binary(t).Dir },
		"unicode and spaces": func(t *testing.T) string { return gitxtest.Unicode(t).Dir },
		"empty repository":   func(t *testing.T) string { return gitxtest.Init(t).Dir },
		"no commits":         func(t *testing.T) string { return gitxtest.NoCommits(t).Dir },
	}
	tools := []struct {
		name string
		args map[string]any
	}{
		{"repo_brief", nil}, {"repo_scope", nil}, {"repo_status", map[string]any{"untracked": "all"}}, {"repo_refs", nil},
		{"repo_branch_stack", nil}, {"repo_history", map[string]any{"withStats": true}}, {"repo_reflog", nil},
		{"repo_conflict_preflight", map[string]any{"theirs": "HEAD~1"}}, {"conflict_read", nil},
		{"commit_details", map[string]any{"rev": "HEAD"}}, {"worktree_changes", nil}, {"worktree_list", nil},
		{"submodule_status", nil}, {"diff_text", nil}, {"diff_text", map[string]any{"staged": true}},
		{"diff_text", map[string]any{"base": "HEAD"}}, {"diff_semantic", nil}, {"diff_semantic", map[string]any{"base": "HEAD"}},
	}
	// Failures a fixture legitimately produces, with their code: without
	// commits there is no HEAD to name, and HEAD~1 needs two commits.
	expected := map[string]errcode.Code{}
	for _, f := range []string{"empty repository", "no commits"} {
		for _, k := range []string{"repo_conflict_preflight", "commit_details", "repo_branch_stack", "diff_text+base", "diff_semantic+base"} {
			expected[f+"/"+k] = errcode.InvalidArgument
		}
	}
	for _, f := range []string{"binary files", "unicode and spaces", "worktrees"} {
		expected[f+"/repo_conflict_preflight"] = errcode.InvalidArgument
	}
	for name, build := range fixtures {
		t.Run(name, func(t *testing.T) {
			dir := build(t)
			cs := gitSession(t, filepath.Dir(dir))
			results := map[string]*mcp.CallToolResult{}
			for _, tool := range tools {
				args := map[string]any{"repoPath": dir}
				key := tool.name
				for _, k := range []string{"base", "staged"} {
					if _, ok := tool.args[k]; ok {
						key += "+" + k
					}
				}
				for k, v := range tool.args {
					args[k] = v
				}
				res := gitCall(t, cs, tool.name, args)
				results[key] = res
				want, fails := expected[name+"/"+key]
				switch {
				case res.IsError && (!fails || gitErrorCode(res) != want):
					t.Errorf("%s: %s", key, gitResultText(res))
				case !res.IsError && fails:
					t.Errorf("%s: succeeded, want %s: %s", key, want, gitResultText(res))
				}
			}
			brief := decode[RepoBriefOut](t, results["repo_brief"])
			switch name {
			case "merge in progress":
				c := decode[ConflictReadOut](t, results["conflict_read"])
				if brief.Operation == nil || brief.Operation.Kind != "merge" || len(c.Files) != 1 || c.Files[0].Base == nil || len(c.Files[0].Markers) != 1 {
					t.Errorf("merge: %s", gitResultText(results["conflict_read"]))
				}
			case "rebase in progress":
				c := decode[ConflictReadOut](t, results["conflict_read"])
				if brief.Operation == nil || brief.Operation.Kind != "rebase" || c.Theirs == nil || c.Note == "" {
					t.Errorf("rebase: %s", gitResultText(results["conflict_read"]))
				}
			case "detached HEAD":
				if !brief.Detached {
					t.Errorf("detached: %+v", brief.Brief)
				}
			case "submodules":
				s := decode[SubmoduleStatusOut](t, results["submodule_status"])
				if brief.Submodules == nil || brief.Submodules.Drifted != 1 || len(s.Submodules) != 3 {
					t.Errorf("submodules: %s", gitResultText(results["submodule_status"]))
				}
			case "stashes":
				if brief.Stashes != 2 {
					t.Errorf("stashes: %+v", brief.Brief)
				}
			case "worktrees":
				w := decode[WorktreeListOut](t, results["worktree_list"])
				s := decode[RepoScopeOut](t, results["repo_scope"])
				if len(w.Worktrees) != 3 || !s.Linked || brief.Branch != "wt" {
					t.Errorf("worktrees: %s %s", gitResultText(results["worktree_list"]), gitResultText(results["repo_scope"]))
				}
			case "binary files":
				d := decode[DiffTextOut](t, results["diff_text"])
				c := decode[WorktreeChangesOut](t, results["worktree_changes"])
				if !strings.Contains(d.Diff, "Binary files a/img.bin and b/img.bin differ") || !c.Files[0].Unstaged.Binary {
					t.Errorf("binary: %s", gitResultText(results["diff_text"]))
				}
			case "unicode and spaces":
				d := decode[DiffTextOut](t, results["diff_text"])
				s := decode[DiffSemanticOut](t, results["diff_semantic"])
				st := decode[RepoStatusOut](t, results["repo_status"])
				if d.Files != 2 || !strings.Contains(d.Diff, "docs/read me.md") || s.Parsed != 1 || len(st.Files) != 3 {
					t.Errorf("unicode: %s\n%s\n%s", gitResultText(results["diff_text"]), gitResultText(results["diff_semantic"]), gitResultText(results["repo_status"]))
				}
			case "empty repository", "no commits":
				h := decode[RepoHistoryOut](t, results["repo_history"])
				if !brief.Unborn || !h.Unborn {
					t.Errorf("%s: %+v %+v", name, brief.Brief, h.History)
				}
			}
		})
	}
}

func TestGitTools_PathErrors(t *testing.T) {
	parent, _ := filepath.EvalSymlinks(t.TempDir())
	inside := gitxtest.InitAt(t, filepath.Join(parent, "root", "repo"))
	inside.WriteCommit("a", "a\n", "a")
	outside := gitxtest.InitAt(t, filepath.Join(parent, "secret-outside"))
	outside.WriteCommit("b", "b\n", "b")
	_ = os.MkdirAll(filepath.Join(parent, "root", "plain"), 0o755)
	cs := gitSession(t, filepath.Join(parent, "root"))

	e := gitCallErr(t, cs, "repo_brief", map[string]any{"repoPath": outside.Dir})
	if e.Code != errcode.PathOutsideRoots || strings.Contains(e.Message, "secret-outside") {
		t.Errorf("outside: %+v", e)
	}
	e = gitCallErr(t, cs, "repo_status", map[string]any{"repoPath": filepath.Join(parent, "root", "..", "secret-outside")})
	if e.Code != errcode.PathOutsideRoots || strings.Contains(e.Message, "secret") {
		t.Errorf("dot-dot: %+v", e)
	}
	if e = gitCallErr(t, cs, "repo_brief", map[string]any{"repoPath": "root/repo"}); e.Code != errcode.InvalidArgument {
		t.Errorf("relative: %+v", e)
	}
	if e = gitCallErr(t, cs, "repo_brief", map[string]any{"repoPath": filepath.Join(parent, "root", "plain")}); e.Code != errcode.NotARepository {
		t.Errorf("not a repository: %+v", e)
	}
	if err := os.Symlink(outside.Dir, filepath.Join(parent, "root", "link")); err != nil {
		t.Fatal(err)
	}
	if e = gitCallErr(t, cs, "diff_text", map[string]any{"repoPath": filepath.Join(parent, "root", "link")}); e.Code != errcode.PathOutsideRoots {
		t.Errorf("symlink out: %+v", e)
	}
	if e = gitCallErr(t, cs, "diff_text", map[string]any{"repoPath": inside.Dir, "paths": []string{"../../secret-outside/b"}}); e.Code != errcode.InvalidArgument {
		t.Errorf("path escape: %+v", e)
	}
	// A .git file, or a linked worktree's common directory, that leads
	// out of the roots: every read refuses it and says nothing of it.
	po := gitxtest.NewPointsOutside(t)
	out := gitSession(t, po.Root)
	for _, tool := range []string{"repo_brief", "repo_history", "repo_refs", "worktree_list"} {
		for _, p := range []string{po.GitFile, filepath.Join(po.GitFile, "sub"), po.Worktree} {
			res := gitCall(t, out, tool, map[string]any{"repoPath": p})
			if gitErrorCode(res) != errcode.PathOutsideRoots || strings.Contains(gitResultText(res), "outside commit") || strings.Contains(gitResultText(res), po.Outside.Dir) {
				t.Errorf("%s(%s) through a .git file: %s", tool, p, gitResultText(res))
			}
		}
	}
	// Fleet: an outside path is reported by index, never echoed.
	radar := gitCallOK[FleetRadarOut](t, cs, "fleet_radar", map[string]any{"repoPaths": []string{inside.Dir, outside.Dir}})
	if radar.Scanned != 1 || len(radar.Errors) != 1 || radar.Errors[0].Path != "repoPaths[1]" || radar.Errors[0].Code != errcode.PathOutsideRoots {
		t.Errorf("fleet with an outside path: %+v", radar.Radar)
	}
	// No roots at all: a clear message.
	none := gitSession(t)
	if e = gitCallErr(t, none, "repo_brief", map[string]any{"repoPath": inside.Dir}); e.Code != errcode.PathOutsideRoots || !strings.Contains(e.Message, "SLUICE_ALLOWED_ROOTS") {
		t.Errorf("no roots: %+v", e)
	}
}

// TestGitTools_OptionInjection puts option-shaped values into every
// revision, ref and path argument of every git tool: each call fails with
// invalid_argument and no git process starts.
func TestGitTools_OptionInjection(t *testing.T) {
	r := gitxtest.Diverged(t)
	cs := gitSession(t, filepath.Dir(r.Dir))
	run, err := gitx.Default()
	if err != nil {
		t.Fatal(err)
	}
	// The payloads that would write a file if git took them as options
	// write it in marks.
	marks := t.TempDir()
	payloads := []string{"--output=" + filepath.Join(marks, "x"), "-n1", "--upload-pack=touch " + filepath.Join(marks, "pwned")}
	type arg struct {
		tool, name string
		list       bool
		extra      map[string]any
	}
	args := []arg{
		{"repo_refs", "pattern", false, nil},
		{"repo_branch_stack", "branch", false, nil}, {"repo_branch_stack", "base", false, nil},
		{"repo_history", "rev", false, nil}, {"repo_history", "paths", true, nil},
		{"repo_reflog", "ref", false, nil},
		{"repo_conflict_preflight", "theirs", false, nil}, {"repo_conflict_preflight", "ours", false, map[string]any{"theirs": "feature"}},
		{"conflict_read", "paths", true, nil},
		{"commit_details", "rev", false, nil},
		{"worktree_changes", "paths", true, nil},
		{"diff_text", "base", false, nil}, {"diff_text", "target", false, map[string]any{"base": "main"}}, {"diff_text", "paths", true, nil},
		{"diff_semantic", "base", false, nil}, {"diff_semantic", "target", false, map[string]any{"base": "main"}}, {"diff_semantic", "paths", true, nil},
	}
	for _, tool := range []string{"repo_brief", "repo_scope", "repo_status", "repo_refs", "repo_branch_stack", "repo_history", "repo_reflog",
		"repo_conflict_preflight", "conflict_read", "commit_details", "worktree_changes", "worktree_list", "submodule_status", "diff_text", "diff_semantic",
		"restore_points", "safety_timeline", "agents_presence"} {
		args = append(args, arg{tool, "repoPath", false, nil})
	}
	args = append(args, arg{"restore_point_details", "repoPath", false, map[string]any{"restorePointId": "p1"}},
		arg{"safety_event", "repoPath", false, map[string]any{"eventId": "rp:p1"}})
	// Every tool with a repository argument is in the list.
	listed := map[string]bool{}
	for _, a := range args {
		listed[a.tool] = true
	}
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if props, _ := tool.InputSchema.(map[string]any)["properties"].(map[string]any); props != nil {
			if _, ok := props["repoPath"]; ok && !listed[tool.Name] {
				t.Errorf("%s takes a repoPath but is not exercised", tool.Name)
			}
		}
	}
	args = append(args, arg{"fleet_radar", "repoPaths", true, nil}, arg{"fleet_radar", "under", true, nil},
		arg{"fleet_digest", "repoPaths", true, nil}, arg{"fleet_digest", "under", true, nil})
	for _, a := range args {
		for _, p := range payloads {
			in := map[string]any{"repoPath": r.Dir}
			if strings.HasPrefix(a.tool, "fleet_") {
				in = map[string]any{}
			}
			for k, v := range a.extra {
				in[k] = v
			}
			if a.tool == "repo_conflict_preflight" && a.name != "theirs" {
				in["theirs"] = "feature"
			}
			if a.tool == "commit_details" && a.name != "rev" {
				in["rev"] = "HEAD"
			}
			if a.list {
				in[a.name] = []string{p}
			} else {
				in[a.name] = p
			}
			before := run.Started()
			e := gitCallErr(t, cs, a.tool, in)
			if e.Code != errcode.InvalidArgument {
				t.Errorf("%s.%s=%q: code %s (%s)", a.tool, a.name, p, e.Code, e.Message)
			}
			if run.Started() != before {
				t.Errorf("%s.%s=%q: git was started", a.tool, a.name, p)
			}
		}
	}
	if ents, _ := os.ReadDir(marks); len(ents) != 0 {
		t.Errorf("%v written: an injected option ran", ents)
	}
	// Ordinary revision syntax passes the same checks and works.
	r.Git("branch", "topic/x", "main~1")
	r.Git("tag", "v1.2.3", "main~1")
	r.Git("update-ref", "refs/remotes/origin/main", "main~1")
	full := r.Git("rev-parse", "main~1")
	for _, rev := range []string{"HEAD~1", "HEAD^{commit}", "origin/main", "refs/heads/topic/x", "v1.2.3", full, "main@{1}"} {
		d := gitCallOK[CommitDetailsOut](t, cs, "commit_details", map[string]any{"repoPath": r.Dir, "rev": rev})
		if d.SHA == "" {
			t.Errorf("commit_details(%q): %+v", rev, d.CommitDetails)
		}
		gitCallOK[RepoHistoryOut](t, cs, "repo_history", map[string]any{"repoPath": r.Dir, "rev": rev, "limit": 1})
		gitCallOK[DiffTextOut](t, cs, "diff_text", map[string]any{"repoPath": r.Dir, "base": rev, "target": "HEAD"})
	}
}

// TestGitTools_HostileRepository calls every git tool through MCP on the
// hostile fixture: no program it configures runs and nothing changes.
func TestGitTools_HostileRepository(t *testing.T) {
	h := gitxtest.NewHostile(t)
	root := filepath.Dir(h.Dir)
	before := gitxtest.Snapshot(t, h.Dir)
	cs := gitSession(t, root)
	repo := func(kv ...any) map[string]any {
		m := map[string]any{"repoPath": h.Dir}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"repo_brief", repo()}, {"repo_scope", repo()}, {"repo_status", repo("untracked", "all")}, {"repo_refs", repo()},
		{"repo_branch_stack", repo("branch", "feature")}, {"repo_history", repo("withStats", true)}, {"repo_reflog", repo()},
		{"commit_details", repo("rev", "feature")}, {"worktree_changes", repo()}, {"worktree_list", repo()},
		{"submodule_status", repo()}, {"conflict_read", repo()},
		{"diff_text", repo()}, {"diff_text", repo("paths", []string{"filtered.dat", "conv.tc"})},
		{"diff_text", repo("base", "HEAD")}, {"diff_text", repo("staged", true)},
		{"diff_text", repo("base", "main", "target", "feature")}, {"diff_text", repo("base", "main", "target", "feature", "mergeBase", true)},
		{"diff_semantic", repo()}, {"diff_semantic", repo("base", "main", "target", "feature")},
		{"fleet_radar", map[string]any{}}, {"fleet_digest", map[string]any{"since": "1000w"}},
		{"sluice_capabilities", nil},
	}
	for _, c := range calls {
		res := gitCall(t, cs, c.tool, c.args)
		if res.IsError {
			t.Errorf("%s: %s", c.tool, gitResultText(res))
		}
	}
	// The merge driver would run: the preflight says so instead.
	if e := gitCallErr(t, cs, "repo_conflict_preflight", repo("theirs", "feature")); e.Code != errcode.Unsupported {
		t.Errorf("preflight: %+v", e)
	}
	d := gitCallOK[DiffTextOut](t, cs, "diff_text", repo("paths", []string{"conv.tc"}))
	if !strings.Contains(d.Diff, "+worktree one") {
		t.Errorf("textconv output instead of the raw diff: %s", d.Diff)
	}
	scope := gitCallOK[RepoScopeOut](t, cs, "repo_scope", repo())
	for _, r := range scope.Remotes {
		if strings.Contains(r.URL, "SECRET") {
			t.Errorf("credential in a remote URL: %s", r.URL)
		}
	}
	if m := h.MarkerFiles(t); len(m) > 0 {
		t.Fatalf("the repository made git run programs: %v", m)
	}
	if diff := gitxtest.DiffSnapshots(before, gitxtest.Snapshot(t, h.Dir)); len(diff) > 0 {
		t.Fatalf("reading changed the repository: %v", diff)
	}
}

// briefRepo is the repository repo_brief's budget is measured on: 30
// commits, two more branches, an upstream two commits behind, and an
// unstaged and an untracked file.
func briefRepo(t *testing.T) *gitxtest.Repo {
	t.Helper()
	r := gitxtest.Basic(t, 30)
	r.Git("branch", "feature/one")
	r.Git("branch", "feature/two")
	r.Git("remote", "add", "origin", "https://example.com/x.git")
	r.Git("update-ref", "refs/remotes/origin/main", "HEAD~2")
	r.Git("branch", "--set-upstream-to=origin/main", "main")
	r.Write("src/file1.txt", "changed\n")
	r.Write("new.txt", "new\n")
	return r
}

// TestRepoBrief_TokenBudget: repo_brief on a 30-commit repository fits in
// 600 tokens (bytes/4) as the client receives it.
func TestRepoBrief_TokenBudget(t *testing.T) {
	r := briefRepo(t)
	cs := gitSession(t, filepath.Dir(r.Dir))
	res := gitCall(t, cs, "repo_brief", map[string]any{"repoPath": r.Dir})
	if res.IsError {
		t.Fatal(gitResultText(res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	tokens := len(b) / 4
	t.Logf("repo_brief: %d bytes, ~%d tokens", len(b), tokens)
	if tokens > 600 {
		t.Fatalf("repo_brief is %d tokens (> 600): %s", tokens, b)
	}
	if text := gitResultText(res); len(text)/4 > 600 {
		t.Fatalf("repo_brief text content is %d tokens", len(text)/4)
	}
}

// TestStdio_Subprocess_RepoBrief drives the built binary over stdio with
// the go-sdk CommandTransport and calls repo_brief and diff_text.
func TestStdio_Subprocess_RepoBrief(t *testing.T) {
	r := gitxtest.Basic(t, 5)
	r.Write("src/file1.txt", "changed\n")
	env, _ := testEnv(t, filepath.Dir(r.Dir))
	cmd := exec.Command(sidecarBinary(t), "--toolsets", "git")
	cmd.Env = env
	client := mcp.NewClient(&mcp.Implementation{Name: "stdio-git-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "repo_brief", Arguments: map[string]any{"repoPath": r.Dir}})
	if err != nil || res.IsError {
		t.Fatalf("repo_brief: %v %s", err, gitResultText(res))
	}
	b := decode[RepoBriefOut](t, res)
	if b.Branch != "main" || b.Worktree.Unstaged != 1 || len(b.Recent) != briefCommits {
		t.Fatalf("repo_brief over stdio: %+v", b.Brief)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "diff_text", Arguments: map[string]any{"repoPath": r.Dir}})
	if err != nil || res.IsError || !strings.Contains(decode[DiffTextOut](t, res).Diff, "+changed") {
		t.Fatalf("diff_text over stdio: %v %s", err, gitResultText(res))
	}
}

// TestStdio_InvalidRoots_FailsStartup: a roots configuration that is not
// usable stops the sidecar before it serves anything.
func TestStdio_InvalidRoots_FailsStartup(t *testing.T) {
	bin := sidecarBinary(t)
	for name, roots := range map[string]string{"relative": "projects/x", "missing": "/nonexistent/sluice-roots", "filesystem root": "/"} {
		env, _ := testEnv(t)
		for i, kv := range env {
			if strings.HasPrefix(kv, "SLUICE_ALLOWED_ROOTS=") {
				env[i] = "SLUICE_ALLOWED_ROOTS=" + roots
			}
		}
		cmd := exec.Command(bin)
		cmd.Env = env
		cmd.Stdin = strings.NewReader("")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "allowedRoots") {
			t.Errorf("%s roots: err %v, output %s", name, err, out)
		}
	}
	// Roots handed to New directly are checked the same way.
	_, cfg := testEnv(t)
	cfg.AllowedRoots = []string{"relative/root"}
	s, err := New(Options{Config: cfg, Toolsets: readToolsets})
	if err != nil {
		t.Fatal(err)
	}
	// Every git tool says so, the safety tools included.
	cs := connectInMemory(t, s)
	for _, tool := range []string{"repo_brief", "restore_points", "safety_timeline"} {
		e := gitCallErr(t, cs, tool, map[string]any{"repoPath": "/tmp"})
		if e.Code != errcode.PathOutsideRoots || !strings.Contains(e.Message, "allowed roots configuration is invalid") {
			t.Errorf("%s with invalid roots in a hand-built config: %+v", tool, e)
		}
	}
}
