package app

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/sluicehq/sluice/core/proposal"
	"github.com/sluicehq/sluice/sidecar/fakemodel"
)

// The agents people run, started confined with `sluice run` on the decoy
// machine and driven by a fake model on 127.0.0.1 (the session's model
// host): the model has the agent's own shell tool try, one by one,
// everything on the list (confined_probes_test.go). Every attempt fails,
// no tripwire runs, the person's checkout stays byte-identical, and the
// model key is in no process's command line on the machine. Then the
// agent fixes a file in its copy, runs the project's test there and
// proposes the commit through Sluice's MCP tools; the person approves it
// in headless Chromium, and exactly the sealed content lands, on a card
// that says "confined".

// confinedAgent is how one agent is started and how its tools are named.
type confinedAgent struct {
	program string
	// args follow `sluice run PROGRAM`; run adds the prompt where {P} is.
	args []string
	// keyVar is the variable of its model key.
	keyVar string
	// env are the person's variables for this agent (its model endpoint,
	// its key), {URL} replaced by the fake model's URL.
	env []string
	// flags go before the program (--allow-host for a model endpoint its
	// variables do not name, --env).
	flags   []string
	handler func(*fakemodel.Model, http.ResponseWriter, *http.Request, []byte)
	// shell is a call of the agent's own shell tool; mcp names one of
	// Sluice's tools as the agent does.
	shell func(cmd string) fakemodel.Call
	mcp   func(tool string, args map[string]any) fakemodel.Call
	mark  string
	// home writes what a person sets up once in the agent's confined home
	// (its own settings), before the first session.
	home func(dir, url string) error
	// runtime is `sluice run --runtime` ("": bubblewrap, the default).
	runtime string
}

func TestConfined_ClaudeCode(t *testing.T) { driveConfined(t, claudeCode()) }

// Under gVisor: the agent's container has a kernel of its own.
func TestConfined_ClaudeCode_Runsc(t *testing.T) {
	a := claudeCode()
	a.runtime = "runsc"
	driveConfined(t, a)
}

func claudeCode() confinedAgent {
	return confinedAgent{
		program: "claude", keyVar: "ANTHROPIC_API_KEY", mark: "Bash",
		args:    []string{"-p", "{P}", "--dangerously-skip-permissions", "--model", "claude-sonnet-4-5"},
		env:     []string{"ANTHROPIC_BASE_URL={URL}", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "ENABLE_TOOL_SEARCH=false"},
		flags:   []string{"--env", "ENABLE_TOOL_SEARCH"},
		handler: fakemodel.Anthropic,
		shell: func(cmd string) fakemodel.Call {
			return fakemodel.Call{Tool: "Bash", Args: map[string]any{"command": cmd, "description": "probe"}}
		},
		mcp: func(tool string, args map[string]any) fakemodel.Call {
			return fakemodel.Call{Tool: "mcp__sluice__" + tool, Args: args}
		},
	}
}

func TestConfined_Codex(t *testing.T) { driveConfined(t, codex()) }

// In a container of the Engine's default runtime.
func TestConfined_Codex_Docker(t *testing.T) {
	a := codex()
	a.runtime = "docker"
	driveConfined(t, a)
}

func codex() confinedAgent {
	return confinedAgent{
		program: "codex", keyVar: "FAKE_MODEL_KEY", mark: "exec_command",
		// A provider of the person's own, named on the command line: its
		// endpoint is allowed for the session, its key variable passed in.
		flags: []string{"--allow-host", "{HOST}", "--env", "FAKE_MODEL_KEY"},
		args: []string{"exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
			"-c", "model_provider=fake", "-c", `model_providers.fake={name="fake",base_url="{URL}/v1",wire_api="responses",env_key="FAKE_MODEL_KEY"}`,
			"-m", "fake-model", "{P}"},
		handler: fakemodel.OpenAIResponses,
		shell: func(cmd string) fakemodel.Call {
			return fakemodel.Call{Tool: "exec_command", Args: map[string]any{"cmd": cmd}}
		},
		mcp: func(tool string, args map[string]any) fakemodel.Call {
			return fakemodel.Call{Tool: "mcp__sluice/" + tool, Args: args}
		},
	}
}

func TestConfined_GeminiCLI(t *testing.T) {
	driveConfined(t, confinedAgent{
		program: "gemini", keyVar: "GEMINI_API_KEY", mark: "run_shell_command",
		args:    []string{"-p", "{P}", "--yolo", "-m", "gemini-2.5-flash"},
		env:     []string{"GOOGLE_GEMINI_BASE_URL={URL}"},
		handler: fakemodel.Gemini,
		shell: func(cmd string) fakemodel.Call {
			return fakemodel.Call{Tool: "run_shell_command", Args: map[string]any{"command": cmd, "description": "probe"}}
		},
		mcp: func(tool string, args map[string]any) fakemodel.Call {
			args["wait_for_previous"] = false
			return fakemodel.Call{Tool: "mcp_sluice_" + tool, Args: args}
		},
		// The person chose API-key sign-in once, in the session.
		home: func(dir, _ string) error {
			return writeJSONFile(filepath.Join(dir, ".gemini", "settings.json"), map[string]any{
				"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
				"privacy":  map[string]any{"usageStatisticsEnabled": false},
			})
		},
	})
}

func TestConfined_QwenCode(t *testing.T) {
	driveConfined(t, confinedAgent{
		program: "qwen", keyVar: "OPENAI_API_KEY", mark: "run_shell_command",
		args:    []string{"-p", "{P}", "--yolo"},
		env:     []string{"OPENAI_BASE_URL={URL}/v1", "OPENAI_MODEL=fake-model"},
		handler: fakemodel.OpenAIChat,
		// Qwen Code's shell tool now and then reports a quick command's
		// output as empty, or cut short; a model would run it again. The
		// command ends by printing a mark (split in the command, which
		// Qwen Code shows beside the output), so a whole output is known.
		shell: func(cmd string) fakemodel.Call {
			return fakemodel.Call{Tool: "run_shell_command", Args: map[string]any{"command": cmd + `; echo "==EN""D=="`}, RetryUnless: "==END=="}
		},
		mcp: func(tool string, args map[string]any) fakemodel.Call {
			return fakemodel.Call{Tool: "mcp__sluice__" + tool, Args: args}
		},
		home: func(dir, _ string) error {
			return writeJSONFile(filepath.Join(dir, ".qwen", "settings.json"), map[string]any{
				"security": map[string]any{"auth": map[string]any{"selectedType": "openai"}},
				"tools":    map[string]any{"toolSearch": map[string]any{"enabled": false}},
				"privacy":  map[string]any{"usageStatisticsEnabled": false},
			})
		},
	})
}

func TestConfined_CopilotCLI(t *testing.T) {
	driveConfined(t, confinedAgent{
		program: "copilot", keyVar: "COPILOT_PROVIDER_API_KEY", mark: "bash",
		args:    []string{"-p", "{P}", "--yolo"},
		env:     []string{"COPILOT_PROVIDER_BASE_URL={URL}/v1", "COPILOT_PROVIDER_TYPE=openai", "COPILOT_MODEL=fake-model"},
		handler: fakemodel.OpenAIChat,
		shell: func(cmd string) fakemodel.Call {
			return fakemodel.Call{Tool: "bash", Args: map[string]any{"command": cmd, "description": "probe"}}
		},
		mcp: func(tool string, args map[string]any) fakemodel.Call {
			return fakemodel.Call{Tool: "sluice-" + tool, Args: args}
		},
	})
}

func TestConfined_Opencode(t *testing.T) {
	driveConfined(t, confinedAgent{
		program: "opencode", keyVar: "OPENCODE_FAKE_KEY", mark: "bash",
		args: []string{"run", "{P}"},
		// Its provider is named in its own settings, not in a variable:
		// the person allows the endpoint for the session.
		flags:   []string{"--allow-host", "{HOST}", "--env", "OPENCODE_FAKE_KEY"},
		handler: fakemodel.OpenAIChat,
		shell: func(cmd string) fakemodel.Call {
			return fakemodel.Call{Tool: "bash", Args: map[string]any{"command": cmd, "description": "probe"}}
		},
		mcp: func(tool string, args map[string]any) fakemodel.Call {
			return fakemodel.Call{Tool: "sluice_" + tool, Args: args}
		},
		home: func(dir, url string) error {
			return writeJSONFile(filepath.Join(dir, ".config", "opencode", "opencode.json"), map[string]any{
				"$schema": "https://opencode.ai/config.json",
				"model":   "fake/fake-model",
				"provider": map[string]any{"fake": map[string]any{
					"npm": "@ai-sdk/openai-compatible", "name": "Fake",
					"options": map[string]any{"baseURL": url + "/v1", "apiKey": "{env:OPENCODE_FAKE_KEY}"},
					"models":  map[string]any{"fake-model": map[string]any{"name": "Fake model", "tool_call": true}},
				}},
				"autoupdate": false, "share": "disabled",
				"permission": map[string]any{"bash": "allow", "edit": "allow", "external_directory": "allow"},
			})
		},
	})
}

func writeJSONFile(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// driveConfined runs the whole scenario for one agent.
func driveConfined(t *testing.T, a confinedAgent) {
	t.Parallel()
	m, args := machineFor(t, a.runtime)
	key := fmt.Sprintf("sk-decoy-model-key-%d-%s", time.Now().UnixNano(), a.program)
	// The controls: as the person, outside any sandbox, every attempt that
	// can be made there reaches what it is after.
	for _, p := range m.probes(key) {
		if p.control == "" {
			continue
		}
		c := m.cmd("sh", "-c", p.control)
		c.Env = append(c.Env, a.keyVar+"="+key)
		c.Dir = m.repo
		out, _ := c.CombinedOutput()
		if !strings.Contains(string(out), "PROBE "+p.name+" RAN") || !strings.Contains(string(out), "=> ESCAPED") {
			t.Fatalf("control %s: outside a session the attempt does not reach its target, so inside it would prove nothing:\n%s", p.name, out)
		}
	}
	if err := os.WriteFile(m.tripLog, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	probes := m.probes(key)
	model := &fakemodel.Model{Mark: a.mark}
	for _, p := range probes {
		model.Calls = append(model.Calls, a.shell(p.cmd))
	}
	if a.runtime != "" {
		// Where the agent runs: the session's container (its hostname),
		// under runsc a kernel of its own (gVisor's boot messages); and
		// the programs the probes use are there (a probe that finds no
		// curl is blocked by nothing).
		model.Calls = append(model.Calls, a.shell("echo 'PROBE where '"+split("RAN")+"; hostname; dmesg 2>&1 | head -3; "+
			"for p in git curl ssh ssh-add xdotool dbus-send base64; do command -v $p >/dev/null || echo \"=> MISSING $p\"; done"))
	}
	model.Calls = append(model.Calls,
		a.shell("cd "+m.repo+" && printf 'fixed\\n' > app.txt && sh test.sh"),
		a.mcp("propose_commit", map[string]any{"repoPath": m.repo, "paths": []string{"app.txt"},
			"message": "Fix the app", "reason": "The project's test passes with this change"}),
	)
	// While the agent waits for its model, the whole machine's processes
	// are read: the key is in an environment (the scan sees it) and in no
	// command line.
	var scanMu sync.Mutex
	var scanned bool
	var inCmdline []string
	model.OnTurn = func(i int) {
		if i != len(probes)/2 {
			return
		}
		scanMu.Lock()
		defer scanMu.Unlock()
		var env int
		inCmdline, env = procScan(key)
		scanned = env > 0
	}
	url := fakemodel.Start(t, model, a.handler)
	if a.home != nil {
		dir := filepath.Join(m.home, ".local", "state", "sluice", "sessions", "homes", clientOf(a.program))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := a.home(dir, url); err != nil {
			t.Fatal(err)
		}
		m.chown(filepath.Join(m.home, ".local"))
	}
	before := m.repoState()
	head := m.git("rev-parse", "HEAD")

	host := strings.TrimPrefix(url, "http://")
	runtime := cmp.Or(a.runtime, "bubblewrap")
	for _, f := range a.flags {
		args = append(args, strings.ReplaceAll(f, "{HOST}", host))
	}
	args = append(args, a.program)
	for _, x := range a.args {
		x = strings.ReplaceAll(x, "{URL}", url)
		args = append(args, strings.ReplaceAll(x, "{P}", "Fix the app and propose the change."))
	}
	c := m.cmd(filepath.Join(m.bin, "sluice-headless"), args...)
	c.Dir = m.repo
	c.Env = append(c.Env, a.keyVar+"="+key)
	for _, e := range a.env {
		c.Env = append(c.Env, strings.ReplaceAll(e, "{URL}", url))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	out, err := runWithin(ctx, c)
	if ctx.Err() != nil || err != nil || !strings.Contains(out, fakemodel.ClosingText) {
		t.Fatalf("sluice run %s (%v):\n%s\nmodel log:\n%s\napp log:\n%s", a.program, err, out, model.Log(), m.appOut.String())
	}
	// Each attempt is judged by the result that carries its own output
	// (a model may have asked again, as below for Qwen Code).
	res := model.Results()
	// What each attempt printed, kept with the run's artifacts.
	os.WriteFile(filepath.Join(artifactDir(t), "confined-"+a.program+"-"+runtime+"-results.txt"), []byte(strings.Join(res, "\n---\n")), 0o644)
	resultOf := func(mark string) string {
		for i := len(res) - 1; i >= 0; i-- {
			if strings.Contains(res[i], mark) {
				return res[i]
			}
		}
		return ""
	}
	for _, p := range probes {
		r := resultOf("PROBE " + p.name + " RAN")
		if a.runtime == "kubernetes" && p.name == "sluice-login" {
			// A pod shows no allowed root (the session image carries the
			// agent), so the sluice binary the probe would run from one is
			// not there to run: that absence is what is checked.
			if !strings.Contains(r, "PROBE "+p.name+" RAN") || !strings.Contains(r, "=> MISSING") || strings.Contains(r, "ESCAPED") {
				t.Errorf("probe %s: the allowed root is in the pod:\n%.1500s", p.name, r)
			}
			continue
		}
		if why := checkProbe(p, r); why != "" {
			t.Errorf("probe %s: %s:\n%.1500s", p.name, why, r)
		}
	}
	if got := m.tripped(); got != "" {
		t.Errorf("tripwires ran:\n%s", got)
	}
	if after := m.repoState(); after != before {
		t.Errorf("the person's checkout changed during the session:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	scanMu.Lock()
	if !scanned {
		t.Errorf("the machine's processes were not read during the session (or no environment held the key)")
	}
	if len(inCmdline) > 0 {
		t.Errorf("the model key is on a command line: %v", inCmdline)
	}
	scanMu.Unlock()
	if a.runtime != "" {
		where := resultOf("PROBE where RAN")
		if strings.Contains(where, "MISSING") {
			t.Errorf("the container lacks a program the probes use:\n%s", where)
		}
		if !strings.Contains(where, "sluice-session") {
			t.Errorf("the agent's shell did not run in the session's container:\n%s", where)
		}
		if a.runtime == "runsc" && !strings.Contains(where, "gVisor") {
			t.Errorf("the agent's shell did not run under gVisor:\n%s", where)
		}
	}
	if resultOf("TESTS PASSED") == "" {
		t.Errorf("the project's test did not pass in the copy:\n%s", strings.Join(res[max(0, len(res)-3):], "\n---\n"))
	}
	id := proposalIDIn(resultOf("proposalId"))
	if id == "" {
		t.Fatalf("propose_commit gave no proposal id:\n%s", strings.Join(res[max(0, len(res)-2):], "\n---\n"))
	}

	// The person approves it in the browser.
	bctx := browserWithin(t, 120*time.Second)
	card := cardSel(id)
	if err := chromedp.Do(bctx,
		chromedp.Navigate(m.login),
		chromedp.WaitVisible(chromedp.CSS(card+" #card-confinement")),
	); err != nil {
		t.Fatalf("the card of %s never showed: %v", id, err)
	}
	confined, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector("`+card+` #card-confinement").dataset.confined`))
	if err != nil {
		t.Fatal(err)
	}
	line, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(card+" #card-confinement")))
	if err != nil {
		t.Fatal(err)
	}
	var sealed struct {
		Sealed *proposal.Sealed `json:"sealed"`
		Origin *proposal.Origin `json:"origin"`
		Digest string           `json:"digest"`
		Pinned proposal.Pinned  `json:"pinned"`
	}
	raw, err := chromedp.Run(bctx, chromedp.Evaluate[string](`fetch('/api/proposals/`+id+`').then(r => r.text())`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(raw), &sealed); err != nil || sealed.Sealed == nil || sealed.Origin == nil {
		t.Fatalf("the card's data: %v %s", err, raw)
	}
	// The card names the session, its sandbox and its network.
	if want := "confined session (" + runtime + "; network: "; confined != "true" || !strings.Contains(line, want) || !strings.Contains(line, "127.0.0.1") ||
		!strings.Contains(line, "session "+sealed.Origin.Session[:8]) {
		t.Fatalf("the card says %q (data-confined=%q), want %q… with the model's host", line, confined, want)
	}
	actx, cancelApprove := context.WithTimeout(bctx, 45*time.Second)
	// The diff is drawn first (a click while it loads could land where
	// the button was).
	err = chromedp.Do(actx,
		chromedp.WaitVisible(chromedp.CSS(card+" .diff-view .d2h-file-wrapper")),
		chromedp.WaitVisible(chromedp.CSS(card+" .approve:not([disabled])")),
		chromedp.Click(chromedp.CSS(card+" .approve")),
		chromedp.WaitVisible(chromedp.CSS(decidedSel(id)+`[data-state="completed"]`)),
	)
	cancelApprove()
	if err != nil {
		state, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`fetch('/api/proposals/`+id+`').then(r => r.text())`, chromedp.EvalAwaitPromise))
		page, _ := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("main")))
		if shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(80)); err == nil {
			os.WriteFile(filepath.Join(artifactDir(t), "confined-"+a.program+"-approve.png"), shot, 0o644)
		}
		t.Fatalf("approve: %v\nthe page: %.3000s\nthe proposal now: %.2000s\napp log:\n%s", err, page, state, m.appOut.String())
	}
	if got := m.git("rev-parse", "HEAD^{tree}"); got != sealed.Sealed.After {
		t.Errorf("HEAD's tree is %s, the card sealed %s", got, sealed.Sealed.After)
	}
	if got := m.git("rev-parse", "HEAD^"); got != head {
		t.Errorf("the commit's parent is %s, not the person's HEAD %s", got, head)
	}
	if b, _ := os.ReadFile(filepath.Join(m.repo, "app.txt")); string(b) != "fixed\n" {
		t.Errorf("app.txt in the person's checkout is %q", b)
	}
	if st := m.git("status", "--porcelain"); st != "" {
		t.Errorf("the checkout is not clean after the approval:\n%s", st)
	}
	if msg := m.git("log", "-1", "--format=%an|%B"); !strings.HasPrefix(msg, "Pat Person|Fix the app") || !strings.Contains(msg, "Sluice-Proposal: "+id) {
		t.Errorf("the commit is not the person's approved one:\n%s", msg)
	}
	m.checkLedger(sealed.Origin.Session, id)
	if a.runtime != "" {
		if n := m.sessionContainers(sealed.Origin.Session); n != 0 {
			t.Errorf("%d containers of the session are left after it ended", n)
		}
	}
	if os.Getenv("SLUICE_CONFINED_LOG") != "" {
		t.Logf("model log:\n%s", model.Log())
	}
	t.Logf("%s under %s: %d attempts blocked, the project's test passed in the copy, %s landed as sealed (tree %s); the card said %q",
		a.program, runtime, len(probes), id, sealed.Sealed.After[:12], line)
}

// machineFor builds the decoy machine for a session's runtime ("":
// bubblewrap) and gives the `sluice run` arguments that choose it.
func machineFor(t *testing.T, runtime string) (*machine, []string) {
	switch runtime {
	case "":
		return newMachine(t), []string{"run"}
	case "kubernetes":
		return newMachine(t, withKubernetes()), []string{"run", "--runtime", runtime}
	}
	return newMachine(t, withContainers()), []string{"run", "--runtime", runtime}
}

// runWithin runs c to its end (or ctx's) and returns what it printed.
func runWithin(ctx context.Context, c *exec.Cmd) (string, error) {
	var out syncBuffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-ctx.Done():
		c.Process.Kill()
		<-done
		return out.String(), ctx.Err()
	}
}

// clientOf is the client name a program runs as.
func clientOf(program string) string {
	switch program {
	case "claude":
		return "claude-code"
	case "gemini":
		return "gemini-cli"
	case "copilot":
		return "copilot-cli"
	case "qwen":
		return "qwen-code"
	}
	return program
}

// proposalIDIn finds a proposal id in a tool result, whatever shape the
// agent gave it.
func proposalIDIn(s string) string {
	for _, key := range []string{`"proposalId":"`, `\"proposalId\":\"`, `"proposalId": "`} {
		if i := strings.Index(s, key); i >= 0 {
			rest := s[i+len(key):]
			if j := strings.IndexAny(rest, `"\`); j > 0 && proposal.ValidID(rest[:j]) {
				return rest[:j]
			}
		}
	}
	return ""
}

// checkLedger reads the ledger as the app wrote it: the session's start
// is on record, and the proposal's entries say it came from that
// confined session.
func (m *machine) checkLedger(session, id string) {
	m.t.Helper()
	f, err := os.Open(filepath.Join(m.home, ".local", "state", "sluice", "audit", "audit.jsonl"))
	if err != nil {
		m.t.Fatal(err)
	}
	defer f.Close()
	var started, confined bool
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e struct {
			EventType  string         `json:"event_type"`
			ProposalID string         `json:"proposal_id"`
			Data       map[string]any `json:"data"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		if e.EventType == "session_started" && e.Data["session"] == session {
			started = true
			// A container session names the image it ran in.
			if m.image != "" && e.Data["image"] != m.image {
				m.t.Errorf("session_started names image %v, the person pinned %s", e.Data["image"], m.image)
			}
		}
		if e.ProposalID == id && e.Data["confined"] == true && e.Data["session"] == session {
			confined = true
		}
	}
	if !started || !confined {
		m.t.Errorf("the ledger: session_started %v, the proposal's entries confined %v", started, confined)
	}
}

// What a session's agent changed and never proposed survives the end of
// everything that ran it: the app dies first (SIGKILL), then the agent and
// the launcher (SIGKILL). When the app starts again, the changes come
// back as one card, confined, and approving it lands exactly them.
func TestConfined_LeftoverSurvivesKill(t *testing.T) { leftoverSurvivesKill(t, "") }

// In a container, the agent outlives its launcher (the Engine runs it):
// the app stops it before it reads what it left.
func TestConfined_LeftoverSurvivesKill_Docker(t *testing.T) { leftoverSurvivesKill(t, "docker") }

// In a pod, the agent outlives its launcher too, and its files are only in
// the pod (it made no tool call, so nothing came back yet): the app reads
// them back from the pod before it deletes it.
func TestConfined_LeftoverSurvivesKill_Kubernetes(t *testing.T) {
	leftoverSurvivesKill(t, "kubernetes")
}

func leftoverSurvivesKill(t *testing.T, runtime string) {
	t.Parallel()
	m, args := machineFor(t, runtime)
	marker := fmt.Sprintf("sluice-leftover-agent-%d", time.Now().UnixNano())
	// After its changes the agent keeps writing: a sandbox that still ran
	// when the app read the copy would have a longer tick.txt than the
	// card.
	script := "printf 'left behind\\n' > left.txt; printf 'fixed\\n' > app.txt; echo 0 > tick.txt; echo READY; " +
		"exec -a " + marker + " bash -c 'i=0; while :; do i=$((i+1)); echo $i >> tick.txt; sleep 0.05; done'"
	c := m.cmd(filepath.Join(m.bin, "sluice-headless"), append(args, "--", "bash", "-c", script)...)
	c.Dir = m.repo
	out := &syncBuffer{}
	c.Stdout, c.Stderr = out, out
	m.start(c)
	waitFor(t, 60*time.Second, "the agent to make its changes", func() bool { return strings.Contains(out.String(), "READY") })
	agent := processWith(marker, m.agentUID())
	if agent == 0 {
		t.Fatalf("the agent's process is not to be found:\n%s", out.String())
	}
	before := m.repoState()
	m.killApp()
	// Under bubblewrap the agent is killed too; a container's agent
	// lives on, as the Engine keeps it.
	kill := []int{c.Process.Pid}
	if runtime == "" {
		kill = []int{agent, c.Process.Pid}
	}
	for _, pid := range kill {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill %d: %v", pid, err)
		}
	}
	c.Wait()
	if runtime == "" {
		waitFor(t, desktopWait, "the sandbox to be gone", func() bool { return processWith(marker, m.agentUID()) == 0 })
	} else if processWith(marker, m.agentUID()) == 0 {
		t.Fatalf("the container's agent did not outlive its launcher, so this proves nothing")
	}
	if after := m.repoState(); after != before {
		t.Fatalf("the checkout changed when the session was killed:\n%s\n%s", before, after)
	}
	m.startApp()

	bctx := browserWithin(t, 90*time.Second)
	if err := chromedp.Do(bctx, chromedp.Navigate(m.login), chromedp.WaitVisible(chromedp.CSS("#card-confinement"))); err != nil {
		t.Fatalf("no card after the restart: %v\napp log:\n%s", err, m.appOut.String())
	}
	raw, err := chromedp.Run(bctx, chromedp.Evaluate[string](`fetch('/api/proposals').then(r => r.text())`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	var cards []struct {
		ID     string           `json:"id"`
		Origin *proposal.Origin `json:"origin"`
		Sealed *proposal.Sealed `json:"sealed"`
	}
	if err := json.Unmarshal([]byte(raw), &cards); err != nil || len(cards) != 1 {
		t.Fatalf("pending after the restart: %v %s", err, raw)
	}
	lc := cards[0]
	if lc.Origin == nil || !lc.Origin.Leftover || lc.Sealed == nil {
		t.Fatalf("the card is not the session's leftover: %s", raw)
	}
	var paths []string
	for _, f := range lc.Sealed.Files {
		paths = append(paths, f.Path)
	}
	if strings.Join(paths, ",") != "app.txt,left.txt,tick.txt" {
		t.Fatalf("the leftover holds %v, want app.txt, left.txt and tick.txt", paths)
	}
	// Nothing writes to the copy any more: what it holds now is what the
	// card sealed (checked again once it landed).
	copyTick, err := os.ReadFile(filepath.Join(m.home, ".local", "state", "sluice", "sessions", lc.Origin.Session, "copy", "tick.txt"))
	if err != nil {
		t.Fatal(err)
	}
	line, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(cardSel(lc.ID)+" #card-confinement")))
	if err != nil || !strings.Contains(line, "never proposed") {
		t.Fatalf("the card says %q (%v)", line, err)
	}
	if err := chromedp.Do(bctx,
		chromedp.WaitVisible(chromedp.CSS(cardSel(lc.ID)+" .diff-view .d2h-file-wrapper")),
		chromedp.WaitVisible(chromedp.CSS(cardSel(lc.ID)+" .approve:not([disabled])")),
		chromedp.Click(chromedp.CSS(cardSel(lc.ID)+" .approve")),
		chromedp.WaitVisible(chromedp.CSS(decidedSel(lc.ID)+`[data-state="completed"]`)),
	); err != nil {
		t.Fatalf("approve: %v\napp log:\n%s", err, m.appOut.String())
	}
	if got := m.git("rev-parse", "HEAD^{tree}"); got != lc.Sealed.After {
		t.Errorf("HEAD's tree %s, sealed %s", got, lc.Sealed.After)
	}
	for name, want := range map[string]string{"left.txt": "left behind\n", "app.txt": "fixed\n", "tick.txt": string(copyTick)} {
		if b, _ := os.ReadFile(filepath.Join(m.repo, name)); string(b) != want {
			t.Errorf("%s in the checkout is %q, want %q", name, b, want)
		}
	}
	if st := m.git("status", "--porcelain"); st != "" {
		t.Errorf("the checkout is not clean:\n%s", st)
	}
	if runtime != "" {
		if n := m.sessionContainers(lc.Origin.Session); n != 0 {
			t.Errorf("%d containers of the session are left", n)
		}
		if processWith(marker, m.agentUID()) != 0 {
			t.Errorf("the container's agent still runs")
		}
	}
}

// anyUID asks processWith for a process of any uid.
const anyUID = -1

// agentUID is the uid the session's agent runs as: the person's, but in a
// pod a uid of the pod's own, drawn from the configured range (each pod's
// PID limit is counted by its uid), which the test does not predict.
func (m *machine) agentUID() int {
	if m.kube {
		return anyUID
	}
	return m.uid
}

// processWith is the id of a process of uid whose command line holds s
// (0 when there is none).
func processWith(s string, uid int) int {
	des, _ := os.ReadDir("/proc")
	for _, de := range des {
		pid, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		st, err := os.Stat(filepath.Join("/proc", de.Name()))
		if err != nil || (uid != anyUID && int(st.Sys().(*syscall.Stat_t).Uid) != uid) {
			continue
		}
		if b, err := os.ReadFile(filepath.Join("/proc", de.Name(), "cmdline")); err == nil && strings.Contains(string(b), s) && !strings.Contains(string(b), "sluice-headless") {
			return pid
		}
	}
	return 0
}

// An agent Sluice did not start gets the warning on its card.
func TestConfined_UnconfinedCardWarns(t *testing.T) {
	f := startWebFlow(t)
	_, out := f.proposeGreeting(t, "claude-code")
	card := cardSel(out["proposalId"].(string))
	if err := chromedp.Do(f.ctx, chromedp.WaitVisible(chromedp.CSS(card+" #card-confinement"))); err != nil {
		t.Fatal(err)
	}
	confined, err := chromedp.Run(f.ctx, chromedp.Evaluate[string](`document.querySelector("`+card+` #card-confinement").dataset.confined`))
	if err != nil {
		t.Fatal(err)
	}
	line, err := chromedp.Run(f.ctx, chromedp.Text(chromedp.CSS(card+" #card-confinement")))
	if err != nil {
		t.Fatal(err)
	}
	if confined != "false" || !strings.Contains(line, "runs as your account: it could write to the repository without asking") {
		t.Fatalf("the card says %q (data-confined=%q), want the warning", line, confined)
	}
}

// With a terminal, the agent gets one of its own: a terminal device that
// is its controlling terminal, sized like the person's, and not the
// person's terminal (whose input nothing in the sandbox can then inject).
func TestConfined_TerminalOfItsOwn(t *testing.T) { terminalOfItsOwn(t, "") }

func TestConfined_TerminalOfItsOwn_Docker(t *testing.T) { terminalOfItsOwn(t, "docker") }

func TestConfined_TerminalOfItsOwn_Runsc(t *testing.T) { terminalOfItsOwn(t, "runsc") }

func terminalOfItsOwn(t *testing.T, runtime string) {
	t.Parallel()
	m, args := machineFor(t, runtime)
	c := m.cmd(filepath.Join(m.bin, "sluice-headless"), append(args, "--", "sh", "-c",
		`echo "dev=$(stat -L -c %d:%t:%T /dev/stdin)"; stty size; if test -t 0 && test -t 1; then echo TTY-OK; fi; echo "ctty=$(cut -d' ' -f7 /proc/$$/stat)"`)...)
	c.Dir = m.repo
	c.SysProcAttr.Setsid, c.SysProcAttr.Setctty = true, true
	f, err := pty.StartWithAttrs(c, &pty.Winsize{Rows: 33, Cols: 101}, c.SysProcAttr)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The terminal the launcher was given: /dev/pts/N of the host's
	// devpts, named by the file system it lies in and its device number
	// (a container's devpts numbers its own terminals from 0 too).
	n, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(fmt.Sprintf("/dev/pts/%d", n), &st); err != nil {
		t.Fatal(err)
	}
	outer := fmt.Sprintf("%d:%x:%x", st.Dev, unix.Major(st.Rdev), unix.Minor(st.Rdev))
	var out strings.Builder
	buf := make([]byte, 4096)
	// A session that never ends fails this test rather than hang the
	// suite.
	stop := time.AfterFunc(2*time.Minute, func() { f.Close(); c.Process.Kill() })
	defer stop.Stop()
	for {
		n, err := f.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			break
		}
	}
	c.Wait()
	got := out.String()
	if !strings.Contains(got, "TTY-OK") || !strings.Contains(got, "33 101") {
		t.Fatalf("inside the session:\n%s", got)
	}
	// The session's terminal is a device of its own, not the one the
	// launcher was given, and it is the agent's controlling terminal.
	var inner, ctty string
	for _, l := range strings.Split(got, "\n") {
		l = strings.TrimSpace(l)
		if v, ok := strings.CutPrefix(l, "dev="); ok {
			inner = v
		}
		if v, ok := strings.CutPrefix(l, "ctty="); ok {
			ctty = strings.TrimSpace(v)
		}
	}
	if inner == "" || inner == outer {
		t.Fatalf("the agent's terminal %q is the person's (%q):\n%s", inner, outer, got)
	}
	// gVisor as Debian packages it passes the container's console in as
	// a host descriptor, which cannot become a controlling terminal: the
	// agent has the terminal (its own, sized like the person's) without
	// job control.
	if n, err := strconv.Atoi(ctty); runtime != "runsc" && (err != nil || n == 0) {
		t.Fatalf("the agent has no controlling terminal:\n%s", got)
	}
}

// The Sessions screen lists a running session (agent, repository, hosts,
// proposals made) with a Stop; Stop ends the agent and the session, as its
// own end would, and is on the record.
func TestConfined_SessionsScreen_Stop(t *testing.T) {
	t.Parallel()
	m := newMachine(t)
	marker := fmt.Sprintf("sluice-stop-agent-%d", time.Now().UnixNano())
	c := m.cmd(filepath.Join(m.bin, "sluice-headless"), "run", "--allow-host", "pypi.org", "--", "bash", "-c", "echo READY; exec -a "+marker+" sleep 600")
	c.Dir = m.repo
	out := &syncBuffer{}
	c.Stdout, c.Stderr = out, out
	m.start(c)
	waitFor(t, 60*time.Second, "the session to start", func() bool { return strings.Contains(out.String(), "READY") })
	exited := make(chan struct{})
	go func() { c.Wait(); close(exited) }()

	bctx := browserWithin(t, 90*time.Second)
	row := `article[id^="session-"][data-state="running"]`
	if err := chromedp.Do(bctx,
		chromedp.Navigate(m.login),
		chromedp.WaitVisible(chromedp.ID("empty-title")),
		chromedp.Navigate("http://"+m.uiAddr+"/#/sessions"),
		chromedp.WaitVisible(chromedp.CSS(row)),
	); err != nil {
		t.Fatalf("the Sessions screen: %v", err)
	}
	text, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(row)))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"bash", "shop", "pypi.org", "bubblewrap"} {
		if !strings.Contains(text, want) {
			t.Errorf("the running session's row lacks %q:\n%s", want, text)
		}
	}
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(row+` button[id^="stop-session-"]`))); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("Stop did not end the session:\n%s", out.String())
	}
	if processWith(marker, m.agentUID()) != 0 {
		t.Errorf("the agent runs on after Stop")
	}
	if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(`article[id^="session-"][data-state="closed"]`))); err != nil {
		t.Fatalf("the session is not shown closed: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(m.home, ".local", "state", "sluice", "audit", "audit.jsonl"))
	if err != nil || !strings.Contains(string(b), `"session_stop_requested"`) || !strings.Contains(string(b), `"session_egress_granted"`) {
		t.Errorf("the ledger lacks the stop or the grant (%v)", err)
	}
}
