package sidecar

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// TestToolsetEnable_InMemory_ListChanged: a session started with the
// default toolsets enables fleet at run time; the go-sdk client is told
// (notifications/tools/list_changed), lists the new tools without a
// restart and calls one; sluice_capabilities reports the toolset on.
func TestToolsetEnable_InMemory_ListChanged(t *testing.T) {
	r := gitxtest.Basic(t, 3)
	_, cfg := testEnv(t, r.Dir)
	s, err := New(Options{Config: cfg, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	cs, changed := listChangedClient(t, s)
	if caps := cs.InitializeResult().Capabilities; caps.Tools == nil || !caps.Tools.ListChanged {
		t.Fatalf("the server does not advertise tools.listChanged: %+v", caps.Tools)
	}

	before := toolNames(t, cs)
	if slices.Contains(before, "fleet_radar") || slices.Contains(before, "workspace_status") || !slices.Contains(before, "toolset_enable") {
		t.Fatalf("default tools without workspaces configured: %v", before)
	}

	out := gitCallOK[ToolsetEnableOut](t, cs, "toolset_enable", map[string]any{"toolset": "fleet"})
	if !slices.Contains(out.Toolsets, "fleet") || !slices.Equal(out.Added, []string{"fleet_radar", "fleet_digest"}) {
		t.Fatalf("toolset_enable fleet: %+v", out)
	}
	awaitListChanged(t, changed, "toolset_enable")
	after := toolNames(t, cs)
	for _, n := range out.Added {
		if !slices.Contains(after, n) {
			t.Errorf("%s is not listed after toolset_enable: %v", n, after)
		}
	}
	radar := gitCallOK[FleetRadarOut](t, cs, "fleet_radar", map[string]any{"repoPaths": []string{r.Dir}})
	if radar.Scanned != 1 {
		t.Errorf("fleet_radar after enabling saw no repository: %+v", radar)
	}
	caps := gitCallOK[CapabilitiesOut](t, cs, "sluice_capabilities", map[string]any{})
	if !slices.Contains(caps.Toolsets, "fleet") || caps.ToolsetTools["fleet"] != 2 || caps.ToolsetTools["workspace"] == 0 {
		t.Errorf("capabilities after enabling fleet: toolsets %v, tools per toolset %v", caps.Toolsets, caps.ToolsetTools)
	}

	// A second toolset in the same session: another notification, and its
	// tools are listed too. A spare notification of the first (the SDK
	// batches its changes over a few milliseconds, so under load enabling
	// fleet can send two) must not stand in for it.
	for len(changed) > 0 {
		<-changed
	}
	safety := gitCallOK[ToolsetEnableOut](t, cs, "toolset_enable", map[string]any{"toolset": "safety"})
	if len(safety.Added) == 0 {
		t.Fatalf("toolset_enable safety added nothing: %+v", safety)
	}
	awaitListChanged(t, changed, "the second toolset_enable (safety)")
	after = toolNames(t, cs)
	for _, n := range safety.Added {
		if !slices.Contains(after, n) {
			t.Errorf("%s is not listed after the second toolset_enable: %v", n, after)
		}
	}

	// Enabling again changes nothing and says so.
	again := gitCallOK[ToolsetEnableOut](t, cs, "toolset_enable", map[string]any{"toolset": "fleet"})
	if len(again.Added) != 0 || len(toolNames(t, cs)) != len(after) {
		t.Errorf("enabling fleet twice: %+v", again)
	}
	// The schema refuses a toolset it does not list; the message names it.
	res := gitCall(t, cs, "toolset_enable", map[string]any{"toolset": "shell"})
	if !res.IsError || !strings.Contains(gitResultText(res), "shell") {
		t.Errorf("toolset_enable shell: %s", gitResultText(res))
	}
}

// TestToolsetEnable_InMemory_OffDefaultToolsets: in each installation the
// toolsets the defaults leave off (propose_more everywhere;
// workspace_search with workspaces configured) are enabled at run time
// through the go-sdk client: the client is told the list changed, lists
// exactly the tools toolset_enable reported, and one of them answers from
// its own handler (a coded error here, not "unknown tool").
func TestToolsetEnable_InMemory_OffDefaultToolsets(t *testing.T) {
	for _, c := range []struct {
		name, image, toolset string
		added                []string
		call                 string
		args                 map[string]any
		code                 errcode.Code
	}{
		{"without workspaces", "", "propose_more",
			[]string{"propose_plan", "propose_worktree", "propose_submodule_pointer"},
			"propose_worktree", map[string]any{"repoPath": "relative", "reason": "r", "path": "wt", "branch": "b"}, errcode.InvalidArgument},
		{"with workspaces", "sha256:" + strings.Repeat("ab", 32), "workspace_search",
			[]string{"workspace_file_list", "workspace_file_glob", "workspace_file_grep"},
			"workspace_file_glob", map[string]any{"workspaceId": "ws-none", "pattern": "*"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, cfg := testEnv(t, t.TempDir())
			cfg.WorkspaceImage = c.image
			s, err := New(Options{Config: cfg, Logger: quietLog()})
			if err != nil {
				t.Fatal(err)
			}
			cs, changed := listChangedClient(t, s)
			before := toolNames(t, cs)
			for _, n := range c.added {
				if slices.Contains(before, n) {
					t.Fatalf("%s is listed before its toolset is enabled: %v", n, before)
				}
			}
			if (c.image != "") != slices.Contains(before, "workspace_run") {
				t.Fatalf("workspace tools listed %v with image %q: %v", slices.Contains(before, "workspace_run"), c.image, before)
			}
			out := gitCallOK[ToolsetEnableOut](t, cs, "toolset_enable", map[string]any{"toolset": c.toolset})
			if !slices.Contains(out.Toolsets, c.toolset) || !slices.Equal(out.Added, c.added) {
				t.Fatalf("toolset_enable %s: %+v", c.toolset, out)
			}
			awaitListChanged(t, changed, "toolset_enable")
			after := toolNames(t, cs)
			if len(after) != len(before)+len(c.added) {
				t.Errorf("%d tools after enabling %s, want %d + %d: %v", len(after), c.toolset, len(before), len(c.added), after)
			}
			for _, n := range c.added {
				if !slices.Contains(after, n) {
					t.Errorf("%s is not listed after toolset_enable: %v", n, after)
				}
			}
			res := gitCall(t, cs, c.call, c.args)
			var got struct {
				Error *ToolError `json:"error"`
			}
			if err := json.Unmarshal([]byte(gitResultText(res)), &got); err != nil || !res.IsError || got.Error == nil || got.Error.Code == "" {
				t.Fatalf("%s after enabling: want the tool's own coded error, got %s", c.call, gitResultText(res))
			}
			if c.code != "" && got.Error.Code != c.code {
				t.Errorf("%s: code %s, want %s (%s)", c.call, got.Error.Code, c.code, got.Error.Message)
			}
		})
	}
}

// listChangedClient connects a client to s that is sent a value on
// changed for each notifications/tools/list_changed.
func listChangedClient(t *testing.T, s *Sidecar) (*mcp.ClientSession, <-chan struct{}) {
	t.Helper()
	changed := make(chan struct{}, 8)
	cs := connectClient(t, s, "test-client", &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	return cs, changed
}

// awaitListChanged fails the test unless a notifications/tools/list_changed
// arrives; after says what should have sent it.
func awaitListChanged(t *testing.T, changed <-chan struct{}, after string) {
	t.Helper()
	select {
	case <-changed:
	case <-time.After(time.Minute): // a hang guard, not a measurement
		t.Fatal("no notifications/tools/list_changed after " + after)
	}
}

// toolNames is what tools/list names, in its order.
func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var n []string
	for _, tl := range res.Tools {
		n = append(n, tl.Name)
	}
	return n
}

// TestToolsetEnable_Unknown_NamesTheChoices: the handler's own refusal (for
// a client that skips schema validation) lists what can be enabled.
func TestToolsetEnable_Unknown_NamesTheChoices(t *testing.T) {
	_, cfg := testEnv(t)
	s, err := New(Options{Config: cfg, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.toolsetEnable(context.Background(), nil, ToolsetEnableIn{Toolset: "shell"})
	te := asToolError(err)
	if te.Code != errcode.InvalidArgument || !strings.Contains(te.Message, "fleet") || !strings.Contains(te.Message, "sluice_capabilities") {
		t.Fatalf("unknown toolset: %+v", te)
	}
}

// toolsBeforeTheBudget are the 50 tools served before the context budget
// split the defaults; every one must stay reachable.
var toolsBeforeTheBudget = strings.Fields(`
	agents_presence commit_details conflict_read diff_semantic diff_text fleet_digest
	fleet_radar proposal_cancel proposal_status proposal_wait propose_branch
	propose_branch_delete propose_commit propose_discard propose_merge propose_patch
	propose_plan propose_push propose_rebase propose_reset propose_submodule_pointer
	propose_worktree repo_branch_stack repo_brief repo_conflict_preflight repo_history
	repo_reflog repo_refs repo_scope repo_status restore_point_details restore_points
	safety_event safety_timeline sluice_capabilities submodule_status workspace_create
	workspace_destroy workspace_diff workspace_file_edit workspace_file_glob
	workspace_file_grep workspace_file_list workspace_file_read workspace_file_write
	workspace_run workspace_seal workspace_status worktree_changes worktree_list
`)

// TestToolsets_EveryToolReachable: each of those tools is served by a
// toolset that toolset_enable can switch on, or is always present.
func TestToolsets_EveryToolReachable(t *testing.T) {
	if len(toolsBeforeTheBudget) != 50 {
		t.Fatalf("%d tools listed, want 50", len(toolsBeforeTheBudget))
	}
	enum := toolsetEnableSchema().Properties["toolset"].Enum
	for _, name := range toolsBeforeTheBudget {
		if name == "sluice_capabilities" {
			continue
		}
		found := ""
		for _, ts := range availableToolsets() {
			if slices.Contains(toolsetToolNames(ts), name) {
				found = ts
			}
		}
		if found == "" {
			t.Errorf("%s is served by no toolset", name)
		} else if !slices.Contains(enum, any(found)) {
			t.Errorf("%s is in toolset %s, which toolset_enable does not offer", name, found)
		}
	}
}

// TestToolsetEnable_WorkspaceWithoutImage_Refused: with no workspace image
// configured, enabling either workspace toolset is refused with a coded
// error that says how the person configures one, and no tool is added.
func TestToolsetEnable_WorkspaceWithoutImage_Refused(t *testing.T) {
	_, cfg := testEnv(t, t.TempDir())
	cfg.WorkspaceImage = ""
	s, err := New(Options{Config: cfg, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := listChangedClient(t, s)
	before := toolNames(t, cs)
	for _, set := range []string{"workspace", "workspace_search"} {
		res := gitCall(t, cs, "toolset_enable", map[string]any{"toolset": set})
		var got struct {
			Error *ToolError `json:"error"`
		}
		if err := json.Unmarshal([]byte(gitResultText(res)), &got); err != nil || !res.IsError || got.Error == nil {
			t.Fatalf("toolset_enable %s without an image: want a coded error, got %s", set, gitResultText(res))
		}
		if got.Error.Code != errcode.Unsupported || !strings.Contains(got.Error.Message, "sluice workspace image use NAME") {
			t.Errorf("toolset_enable %s: %s %q, want unsupported naming `sluice workspace image use NAME`", set, got.Error.Code, got.Error.Message)
		}
	}
	if after := toolNames(t, cs); !slices.Equal(after, before) {
		t.Errorf("tools changed by a refused toolset_enable:\nbefore %v\nafter  %v", before, after)
	}
	caps := gitCallOK[CapabilitiesOut](t, cs, "sluice_capabilities", map[string]any{})
	if slices.Contains(caps.Toolsets, "workspace") || slices.Contains(caps.Toolsets, "workspace_search") {
		t.Errorf("capabilities list a refused toolset as enabled: %v", caps.Toolsets)
	}
}
