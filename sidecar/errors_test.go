package sidecar

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/journal"
)

// modelNeverSees are the codes of core/errcode that never reach a model
// as they are, each with why: the sidecar maps them to another code, or
// only the person's UI answers with them.
var modelNeverSees = map[errcode.Code]string{
	errcode.Internal:              "a bug, not something a model can act on",
	errcode.TooLarge:              "gatewayToolError makes it invalid_argument",
	errcode.Unauthorized:          "gatewayToolError makes it gateway_unavailable",
	errcode.NotFound:              "gatewayToolError makes it gateway_unavailable",
	errcode.Unavailable:           "gatewayToolError makes it gateway_unavailable",
	errcode.Forbidden:             "gatewayToolError makes it proposal_refused",
	errcode.Conflict:              "gatewayToolError makes it proposal_refused",
	errcode.TooManyPending:        "gatewayToolError makes it proposal_refused",
	errcode.DigestMismatch:        "an approval's check; the model sees proposal_terminal",
	errcode.NotApproved:           "the executor's own check; the model sees proposal_terminal",
	errcode.HookFailed:            "an outcome; the model sees proposal_terminal",
	errcode.BranchCheckedOut:      "an outcome; the model sees proposal_terminal",
	errcode.RefExists:             "an outcome; the model sees proposal_terminal",
	errcode.PushRejected:          "an outcome; the model sees proposal_terminal",
	errcode.RepoLocked:            "an outcome; the model sees proposal_terminal",
	errcode.RestoreConflict:       "a restore is the person's, from the UI",
	errcode.RestorePointNotFound:  "a restore is the person's, from the UI",
	errcode.Expired:               "an outcome; the model sees proposal_terminal",
	errcode.Interrupted:           "an outcome; the model sees proposal_terminal",
	errcode.RevalidationFailed:    "an outcome; the model sees proposal_terminal",
	errcode.ConfirmationRequired:  "the UI's",
	errcode.PolicyChanged:         "the UI's",
	errcode.InvalidPolicy:         "the UI's",
	errcode.RuleNotFound:          "the UI's",
	errcode.DestructiveNotTrusted: "the UI's",
	errcode.AlreadyRunning:        "the UI's",
	errcode.AlreadyServing:        "the UI's",
}

// TestErrors_EveryCodeHasANextStep: every stable code (core/errcode) a
// model can act on has a next step, and every other is named in
// modelNeverSees with why, so a new code cannot be added without saying
// what to do about it.
func TestErrors_EveryCodeHasANextStep(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../core/errcode/errcode.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	ast.Inspect(f, func(node ast.Node) bool {
		vs, ok := node.(*ast.ValueSpec)
		if !ok {
			return true
		}
		if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
			return true
		}
		for i, name := range vs.Names {
			if i >= len(vs.Values) {
				continue
			}
			lit, ok := vs.Values[i].(*ast.BasicLit)
			if !ok {
				continue
			}
			code := errcode.Code(strings.Trim(lit.Value, `"`))
			n++
			_, never := modelNeverSees[code]
			switch step := nextSteps[code]; {
			case step == "" && !never:
				t.Errorf("%s (%s) has no next step in nextSteps and is not in modelNeverSees", name.Name, code)
			case step != "" && never:
				t.Errorf("%s (%s) has a next step but is in modelNeverSees", name.Name, code)
			}
		}
		return true
	})
	if n < 40 {
		t.Fatalf("found only %d codes in core/errcode: the parse is wrong", n)
	}
}

// TestErrors_RealFailures_NameTheNextStep calls tools the way a model gets
// them wrong and checks that each error message says what to do next.
func TestErrors_RealFailures_NameTheNextStep(t *testing.T) {
	r := gitxtest.Basic(t, 3)
	root := filepath.Dir(r.Dir)
	plain := filepath.Join(root, "plain")
	if err := os.MkdirAll(plain, 0o755); err != nil {
		t.Fatal(err)
	}
	_, cfg := testEnv(t, root)
	cfg.WorkspaceImage = ""
	s, err := New(Options{Config: cfg, Toolsets: []string{"git", "propose", "workspace"}, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	cs := connectInMemory(t, s)
	for _, c := range []struct {
		tool string
		code errcode.Code
		args map[string]any
	}{
		{"repo_brief", errcode.PathOutsideRoots, map[string]any{"repoPath": "/etc"}},
		{"repo_brief", errcode.NotARepository, map[string]any{"repoPath": plain}},
		{"repo_brief", errcode.InvalidArgument, map[string]any{"repoPath": "relative"}},
		{"diff_text", errcode.InvalidArgument, map[string]any{"repoPath": r.Dir, "base": "-x"}},
		{"diff_text", errcode.InvalidArgument, map[string]any{"repoPath": r.Dir, "base": "nosuchrev"}},
		{"repo_status", errcode.InvalidArgument, map[string]any{"repoPath": r.Dir, "limit": 99999}},
		{"commit_details", errcode.InvalidArgument, map[string]any{"repoPath": r.Dir, "rev": "nosuch"}},
		{"repo_history", errcode.InvalidArgument, map[string]any{"repoPath": r.Dir, "cursor": "garbage"}},
		{"propose_commit", errcode.GatewayUnavailable, map[string]any{"repoPath": r.Dir, "reason": "x", "message": "m", "stageAll": true}},
		{"proposal_status", errcode.GatewayUnavailable, map[string]any{"proposalId": "abc"}},
		{"workspace_status", errcode.Unsupported, map[string]any{"workspaceId": "ws-1"}},
	} {
		e := gitCallErr(t, cs, c.tool, c.args)
		if e.Code != c.code {
			t.Errorf("%s %v: code %s, want %s (%s)", c.tool, c.args, e.Code, c.code, e.Message)
			continue
		}
		if !nextStepCue.MatchString(e.Message) {
			t.Errorf("%s %v: %q names no next step", c.tool, c.args, e.Message)
		}
	}
}

// TestErrors_AuditFailure_ReachesTheAgentAsAuditFailed: when the running
// app cannot write its audit ledger, the agent is told that (audit_failed,
// coded once by the journal and passed through the gateway and this edge),
// not that Sluice is not running; and nothing was stored.
func TestErrors_AuditFailure_ReachesTheAgentAsAuditFailed(t *testing.T) {
	e := newProposeEnv(t, envOpt{})
	e.rec.failWith(errors.New("write audit.jsonl: no space left on device"))
	res, out := call(t, e.cs, "propose_branch", withCommon(e, map[string]any{"name": "agent/audited"}))
	if !res.IsError || out.Error == nil || out.Error.Code != errcode.AuditFailed {
		t.Fatalf("propose with the ledger unwritable: %s; want code %s", resultText(res), errcode.AuditFailed)
	}
	msg := strings.ToLower(out.Error.Message)
	for _, wrong := range []string{"start sluice", "not reachable", "not running"} {
		if strings.Contains(msg, wrong) {
			t.Errorf("an audit failure is explained as %q (it says %q)", out.Error.Message, wrong)
		}
	}
	if !strings.Contains(msg, "audit ledger") || !strings.Contains(msg, "nothing was changed") {
		t.Errorf("message %q does not say the audit ledger could not be written and nothing changed", out.Error.Message)
	}
	if strings.Contains(msg, "no space left") {
		t.Errorf("message %q shows the app's own detail", out.Error.Message)
	}
	if recs, err := e.j.List(journal.Filter{}); err != nil || len(recs) != 0 {
		t.Fatalf("journal after a failed audit: %d records, %v; want none", len(recs), err)
	}
}
