package proposal

import (
	"encoding/json"
	"testing"
)

// Every operation says, in its own definition, what the UI shows of it:
// its label and the facts its card's outcome is said with. The UI has no
// table of its own to fall back on.
func TestEveryOpDeclaresItsFacts(t *testing.T) {
	labels := map[string]Op{}
	for _, d := range opDefs {
		if d.label == "" {
			t.Errorf("%s: no label in its opDef", d.op)
		}
		if d.outcome == nil {
			t.Errorf("%s: no outcome facts in its opDef", d.op)
		}
		if o, ok := labels[d.label]; ok && d.label != "" {
			t.Errorf("%s and %s share the label %q", o, d.op, d.label)
		}
		labels[d.label] = d.op
		if d.op.Label() != d.label {
			t.Errorf("%s: Label() = %q, want %q", d.op, d.op.Label(), d.label)
		}
	}
	if got := OpBranchDelete.Label(); got != "branch delete" {
		t.Errorf("branch_delete label = %q", got)
	}
	want := map[Op]OutcomeFacts{
		OpBranchDelete: {DeletesBranches: true},
		OpRebase:       {ReplaysCommits: true},
		OpPush:         {SendsCommits: true},
		OpCommit:       {WritesCheckoutWhenConfined: true},
		OpMerge:        {},
		OpPlan:         {},
	}
	for o, w := range want {
		if got := o.OutcomeFacts(); got != w {
			t.Errorf("%s: outcome facts %+v, want %+v", o, got, w)
		}
	}
}

// A queue row is called by the branch its arguments are of, when no
// commit message names it.
func TestSubjectBranch(t *testing.T) {
	for _, c := range []struct {
		op   Op
		args string
		want string
	}{
		{OpMerge, `{"source":"fix","target":"main","strategy":"merge"}`, "fix → main"},
		{OpBranch, `{"name":"agent/b","startPoint":"abc"}`, "agent/b"},
		{OpBranchDelete, `{"branches":["old-1","old-2"]}`, "old-1, old-2"},
		{OpRebase, `{"branch":"feature","onto":"main"}`, "feature"},
		{OpPush, `{"remote":"origin","branch":"main"}`, "main"},
		// Elsewhere a branch names only the branch checked out.
		{OpCommit, `{"message":"m","branch":"main"}`, ""},
		{OpReset, `{"mode":"hard","target":"HEAD","branch":"main"}`, ""},
		{OpDiscard, `{"paths":["a"],"branch":"main"}`, ""},
		{OpWorktree, `{"path":"/w","branch":"main"}`, ""},
		{OpPlan, `{"steps":[{"op":"discard","args":{"paths":["a"],"branch":"x"}},{"op":"rebase","args":{"branch":"feature","onto":"main"}},{"op":"merge","args":{"source":"feature","target":"main","strategy":"merge"}}]}`, "feature"},
	} {
		a, err := DecodeArgs(c.op, json.RawMessage(c.args))
		if err != nil {
			t.Fatalf("%s: %v", c.op, err)
		}
		if got := a.SubjectBranch(); got != c.want {
			t.Errorf("%s %s: subject branch %q, want %q", c.op, c.args, got, c.want)
		}
		if c.op == OpPlan {
			if got := StepLabels(a); len(got) != 3 || got[0] != "discard" || got[1] != "rebase" || got[2] != "merge" {
				t.Errorf("plan step labels %q", got)
			}
		} else if got := StepLabels(a); got != nil {
			t.Errorf("%s: step labels %q, want none", c.op, got)
		}
	}
}
