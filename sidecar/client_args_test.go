package sidecar

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// A call carrying an argument a client injects on its own (Gemini CLI's
// wait_for_previous) runs as if it were not there; any other undeclared
// argument is refused with an error that names it.
func TestInjectedArguments_IgnoredOthersRefused(t *testing.T) {
	r := gitxtest.Diverged(t)
	cs := gitSession(t, filepath.Dir(r.Dir))
	for _, a := range InjectedArguments {
		t.Run(a.Name, func(t *testing.T) {
			out := gitCallOK[RepoBriefOut](t, cs, "repo_brief", map[string]any{"repoPath": r.Dir, a.Name: true})
			if out.Branch != "main" || out.Root != r.Dir {
				t.Errorf("repo_brief with %s: %+v", a.Name, out)
			}
		})
	}
	for _, bad := range []string{"wait_for_prev", "bogus"} {
		res := gitCall(t, cs, "repo_brief", map[string]any{"repoPath": r.Dir, bad: true, "wait_for_previous": false})
		text := gitResultText(res)
		if !res.IsError || !strings.Contains(text, bad) {
			t.Errorf("undeclared argument %q: isError=%v %s", bad, res.IsError, text)
		}
		if strings.Contains(text, "wait_for_previous") {
			t.Errorf("the error names the ignored argument too: %s", text)
		}
	}
}

// Removing an injected argument must never drop a real input: no tool may
// declare a property of that name, and every entry says which client adds it.
func TestInjectedArguments_NoToolDeclaresThem(t *testing.T) {
	for _, a := range InjectedArguments {
		if a.Name == "" || a.Client == "" {
			t.Errorf("entry without a name or a client: %+v", a)
		}
	}
	for _, lt := range allTools(t) {
		props, _ := schemaMap(t, lt.Tool.InputSchema)["properties"].(map[string]any)
		for _, a := range InjectedArguments {
			if _, ok := props[a.Name]; ok {
				t.Errorf("%s declares %q, which is removed from every call as client-injected", lt.Tool.Name, a.Name)
			}
		}
	}
}
