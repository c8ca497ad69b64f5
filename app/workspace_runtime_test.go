package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/core/errcode"
)

func savedRuntime(t *testing.T, configDir string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(configDir, "config.json"))
	if os.IsNotExist(err) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	var f map[string]any
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("config.json: %v: %s", err, b)
	}
	v, ok := f["workspaceRuntime"].(string)
	return v, ok
}

// TestAPI_WorkspaceRuntime_SettingsChoice: the settings screen lists the
// Engine's runtimes with the default marked, refuses a name that is no
// runtime name or that the Engine lacks (a typed error, nothing written),
// saves a real one in config.json (audited), which the running app (and
// every sidecar) uses at once; the empty choice goes back to the Engine's
// default.
func TestAPI_WorkspaceRuntime_SettingsChoice(t *testing.T) {
	needWorkspaceDocker(t)
	t.Setenv("SLUICE_WORKSPACE_RUNTIME", "")
	os.Unsetenv("SLUICE_WORKSPACE_RUNTIME")
	a := startApp(t)
	api := &API{app: a, kind: "web"}
	v, err := api.WorkspaceRuntime()
	if err != nil || v.EngineError != "" || v.Saved != "" || v.RestartRequired {
		t.Fatalf("WorkspaceRuntime: %+v %v", v, err)
	}
	var runc, runsc *RuntimeChoice
	for i, c := range v.Runtimes {
		switch c.Name {
		case "runc":
			runc = &v.Runtimes[i]
		case "runsc":
			runsc = &v.Runtimes[i]
		}
	}
	if runc == nil || !runc.Default || runc.NoNetwork {
		t.Fatalf("runc in %+v", v.Runtimes)
	}
	choice := "runc"
	if runsc != nil {
		// Registered here with --network=none (build/scripts/setup.sh).
		if !runsc.NoNetwork {
			t.Errorf("runsc is registered without --network=none: %+v", runsc)
		}
		choice = "runsc"
	}

	for name, want := range map[string]errcode.Code{"Not A Name!": "invalid_argument", "no-such-runtime": "unsupported"} {
		_, err := api.UseWorkspaceRuntime(name)
		ue, _ := FormatError(err).(UIError)
		if err == nil || ue.Code != want {
			t.Errorf("UseWorkspaceRuntime(%q): %v (%q), want %s", name, err, ue.Code, want)
		}
		if got, ok := savedRuntime(t, a.cfg.ConfigDir); ok {
			t.Fatalf("a refused runtime %q wrote %q", name, got)
		}
	}
	v, err = api.UseWorkspaceRuntime(choice)
	if err != nil || v.Saved != choice || v.Running != choice || v.RestartRequired {
		t.Fatalf("UseWorkspaceRuntime(%q): %+v %v", choice, v, err)
	}
	if got, _ := savedRuntime(t, a.cfg.ConfigDir); got != choice {
		t.Fatalf("config.json holds %q", got)
	}
	entries, err := api.Audit()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range entries.Entries {
		if e["event_type"] == "workspace_runtime_set" && e["approval"] == "owner:web" {
			found = true
		}
	}
	if !found {
		t.Fatalf("the choice is not in the ledger")
	}
	v, err = api.UseWorkspaceRuntime("")
	if err != nil || v.Saved != "" || v.RestartRequired {
		t.Fatalf("back to the default: %+v %v", v, err)
	}
	if got, ok := savedRuntime(t, a.cfg.ConfigDir); ok {
		t.Fatalf("the default left workspaceRuntime %q in config.json", got)
	}
}

// TestBrowser_Settings_WorkspaceRuntime: on the Settings screen in
// Chromium the person picks gVisor (or runc where runsc is not
// registered), the choice lands in config.json and the screen says the
// running app uses it (no restart).
func TestBrowser_Settings_WorkspaceRuntime(t *testing.T) {
	needWorkspaceDocker(t)
	t.Setenv("SLUICE_WORKSPACE_RUNTIME", "")
	os.Unsetenv("SLUICE_WORKSPACE_RUNTIME")
	a := startApp(t)
	choice := "runc"
	if v, err := (&API{app: a, kind: "web"}).WorkspaceRuntime(); err == nil {
		for _, r := range v.Runtimes {
			if r.Name == "runsc" {
				choice = "runsc"
			}
		}
	}
	w, token := serveUI(t, a)
	ctx := newBrowser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(w.LoginURL(token)),
		chromedp.WaitVisible(chromedp.ID("empty-title")),
		chromedp.Navigate("http://"+w.Addr()+"/#/settings"),
	); err != nil {
		t.Fatalf("settings: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!!document.querySelector('select[name="workspaceRuntime"] option[value="`+choice+`"]')`)); err != nil {
		t.Fatalf("the runtime choice never listed %s: %v", choice, err)
	}
	// A select's choice as the person's pick reaches React: its value and
	// a change event.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const s = document.querySelector('select[name="workspaceRuntime"]');
		s.value = "`+choice+`"; s.dispatchEvent(new Event("change", {bubbles: true})); return true; })()`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(".use-runtime"))); err != nil {
		t.Fatalf("saving the runtime: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`(document.querySelector('.saved-runtime')?.textContent ?? "").includes("this app runs with `+choice+`")`)); err != nil {
		text, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(".saved-runtime")))
		t.Fatalf("after saving, the screen says %q; want the app running with %s: %v", text, choice, err)
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('.runtime-restart').length`)); n != 0 {
		t.Fatal("the screen still asks for a restart")
	}
	if got, _ := savedRuntime(t, a.cfg.ConfigDir); got != choice {
		t.Fatalf("config.json holds %q, want %q", got, choice)
	}
	(&webFlow{ctx: ctx}).shot(t, "web-settings-runtime.png")
}
