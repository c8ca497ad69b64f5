package sidecar

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/presence"
	"github.com/sluicehq/sluice/core/proposal"
)

// startSidecarProcess runs the real binary over stdio as clientName.
func startSidecarProcess(t *testing.T, env []string, clientName string) (*mcp.ClientSession, *exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(sidecarBinary(t))
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: clientName, Version: "1.0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("start %s: %v\n%s", clientName, err, stderr.String())
	}
	t.Cleanup(func() { cs.Close() })
	return cs, cmd, &stderr
}

func presenceOf(t *testing.T, cs *mcp.ClientSession, repo string) PresenceOut {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "agents_presence", Arguments: map[string]any{"repoPath": repo}})
	if err != nil || res.IsError {
		t.Fatalf("agents_presence: %v %+v", err, res)
	}
	return decode[PresenceOut](t, res)
}

func findAgent(out PresenceOut, name string) *PresenceAgent {
	for i := range out.Agents {
		if out.Agents[i].Name == name {
			return &out.Agents[i]
		}
	}
	return nil
}

// Two sidecar processes on one repository see each other, and a sidecar's
// presence file disappears when it exits.
func TestPresence_TwoSidecars_SeeEachOther(t *testing.T) {
	repo := t.TempDir()
	env, cfg := testEnv(t, repo)
	canon, _ := filepath.EvalSymlinks(repo)

	a, cmdA, _ := startSidecarProcess(t, env, "agent-a")
	if out := presenceOf(t, a, canon); len(out.Agents) != 0 {
		t.Fatalf("alone, agent-a sees %+v", out.Agents)
	}
	b, cmdB, _ := startSidecarProcess(t, env, "agent-b")
	outB := presenceOf(t, b, canon)
	seenA := findAgent(outB, "agent-a")
	if seenA == nil || seenA.Kind != "sidecar" || seenA.State != "working" || seenA.LastTool != "agents_presence" || seenA.PID != cmdA.Process.Pid || seenA.Version != "1.0" {
		t.Fatalf("agent-b's view: %+v", outB.Agents)
	}
	// agent-a's file may hold its first call only after the debounce
	// interval; agent-b's call was the first write of its session.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if seenB := findAgent(presenceOf(t, a, canon), "agent-b"); seenB != nil && seenB.PID == cmdB.Process.Pid {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("agent-a never saw agent-b")
		}
		time.Sleep(100 * time.Millisecond)
	}

	fileA := filepath.Join(cfg.PresenceDir(), strconv.Itoa(cmdA.Process.Pid)+".json")
	if _, err := os.Stat(fileA); err != nil {
		t.Fatalf("agent-a's presence file: %v", err)
	}
	if st, _ := os.Stat(cfg.PresenceDir()); st.Mode().Perm() != 0o700 {
		t.Errorf("presence dir mode %v", st.Mode().Perm())
	}
	a.Close()
	deadline = time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(fileA); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("agent-a's presence file is still there after it exited")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if gone := findAgent(presenceOf(t, b, canon), "agent-a"); gone != nil {
		t.Fatalf("agent-a is still reported after a clean exit: %+v", gone)
	}
}

// A presence directory that is a symlink is refused: nothing is written
// through it, and the sidecar still serves (presence is informational).
func TestPresence_SymlinkedDir_Refused(t *testing.T) {
	repo := t.TempDir()
	env, cfg := testEnv(t, repo)
	canon, _ := filepath.EvalSymlinks(repo)
	if err := cfg.EnsureDirs(); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, cfg.PresenceDir()); err != nil {
		t.Fatal(err)
	}
	cs, _, stderr := startSidecarProcess(t, env, "agent-s")
	if out := presenceOf(t, cs, canon); out.Repo != canon {
		t.Fatalf("agents_presence: %+v", out)
	}
	cs.Close()
	if entries, _ := os.ReadDir(target); len(entries) != 0 {
		t.Fatalf("wrote through the symlinked presence directory: %v", entries)
	}
	if !bytes.Contains(stderr.Bytes(), []byte("symlink")) {
		t.Errorf("no warning about the symlinked directory:\n%s", stderr.String())
	}
}

// A proposal's hint names the other agents in the repository with the
// files both proposed, and records its own files for the others.
func TestProposalPresence_OverlapHint(t *testing.T) {
	repo := t.TempDir()
	_, cfg := testEnv(t, repo)
	canon, _ := filepath.EvalSymlinks(repo)
	pres, err := presence.Open(cfg.PresenceDir(), os.Getpid(), presence.ClientInfo{Name: "sluice-http"})
	if err != nil {
		t.Fatal(err)
	}
	defer pres.Close()
	// Another agent (our parent process stands in for a live one) last
	// proposed changes to a.go and b.go.
	other := presence.Record{Version: presence.FileVersion, PID: os.Getppid(), Client: presence.ClientInfo{Name: "codex"},
		Repos: []presence.Repo{{Path: canon, LastCall: time.Now(), LastTool: "propose_patch", Paths: []string{"a.go", "b.go"}}}}
	b, _ := json.Marshal(other)
	if err := os.WriteFile(filepath.Join(cfg.PresenceDir(), strconv.Itoa(os.Getppid())+".json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Config: cfg, Identity: "build-bot", Presence: pres})
	if err != nil {
		t.Fatal(err)
	}
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "propose_commit"}}
	_, accepted := s.proposalPresence(context.Background(), req, canon, &proposal.CommitArgs{Message: "m", Paths: []string{"b.go", "c.go"}})
	// Until the proposal is accepted, its files are not recorded.
	if rec := pres.Snapshot(); len(rec.Repos) != 0 {
		t.Fatalf("own presence before the answer: %+v", rec.Repos)
	}
	hint := accepted()
	if len(hint) != 1 || hint[0].Name != "codex" || hint[0].State != "working" || len(hint[0].OverlappingPaths) != 1 || hint[0].OverlappingPaths[0] != "b.go" {
		t.Fatalf("hint: %+v", hint)
	}
	rec := pres.Snapshot()
	if len(rec.Repos) != 1 || rec.Repos[0].Agent != "build-bot" || strings.Join(rec.Repos[0].Paths, ",") != "b.go,c.go" {
		t.Fatalf("own presence: %+v", rec.Repos)
	}
}
