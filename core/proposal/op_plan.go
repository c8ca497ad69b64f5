package proposal

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// PlanStep is one operation of a plan.
type PlanStep struct {
	Op   Op   `json:"op"`
	Args Args `json:"args"`
}

// UnmarshalJSON decodes the step's args into the type its op names.
func (s *PlanStep) UnmarshalJSON(b []byte) error {
	var w struct {
		Op   Op              `json:"op"`
		Args json.RawMessage `json:"args"`
	}
	if err := decodeStrict(b, &w); err != nil {
		return err
	}
	if !w.Op.PlanStep() {
		return invalid("steps", "op %q cannot be a plan step", w.Op)
	}
	a, err := DecodeArgs(w.Op, w.Args)
	if err != nil {
		return err
	}
	*s = PlanStep{Op: w.Op, Args: a}
	return nil
}

// PlanArgs are 1–10 steps approved as one unit; execution stops at the
// first step that fails.
type PlanArgs struct {
	Steps []PlanStep `json:"steps"`
}

func (*PlanArgs) Op() Op { return OpPlan }

// OpPlan names the operation.
const OpPlan Op = "plan"

var planDef = opDef{op: OpPlan, newArgs: func() Args { return &PlanArgs{} }, planStep: false, phrase: "a plan", label: "plan", outcome: &OutcomeFacts{}}

func (a *PlanArgs) Validate() error {
	if len(a.Steps) == 0 || len(a.Steps) > MaxPlanSteps {
		return invalid("steps", "a plan has 1 to %d steps", MaxPlanSteps)
	}
	patchBytes := 0
	for i, s := range a.Steps {
		if s.Args == nil || !s.Op.PlanStep() || s.Args.Op() != s.Op {
			return invalid(fmt.Sprintf("steps[%d]", i), "op must be one of merge, rebase, discard, reset, patch, with its args")
		}
		if err := s.Args.Validate(); err != nil {
			return fmt.Errorf("steps[%d]: %w", i, err)
		}
		if p, ok := s.Args.(*PatchArgs); ok {
			patchBytes += len(p.Patch)
		}
	}
	if patchBytes > MaxPatchBytes {
		return invalid("steps", "the patches together are larger than %d bytes", MaxPatchBytes)
	}
	return nil
}

func (a *PlanArgs) Pins() []string {
	var out []string
	for _, s := range a.Steps {
		if s.Args != nil {
			out = appendUnique(out, s.Args.Pins()...)
		}
	}
	return out
}

func (a *PlanArgs) WrittenRefs() []string {
	var out []string
	for _, s := range a.Steps {
		if s.Args != nil {
			out = appendUnique(out, s.Args.WrittenRefs()...)
		}
	}
	return out
}

func (a *PlanArgs) FilesTouched() ([]string, bool) {
	var out []string
	complete := true
	for _, s := range a.Steps {
		if s.Args == nil {
			return nil, false
		}
		f, ok := s.Args.FilesTouched()
		complete = complete && ok
		out = appendUnique(out, f...)
	}
	slices.Sort(out)
	return out, complete
}

func (a *PlanArgs) risk(p Pinned) Risk {
	r := RiskLow
	for _, s := range a.Steps {
		if s.Args != nil {
			r = max(r, s.Args.risk(p))
		}
	}
	return r
}
func (a *PlanArgs) why(p Pinned) string {
	r, why := RiskLow, ""
	for _, s := range a.Steps {
		if s.Args != nil && s.Args.risk(p) >= r {
			r, why = s.Args.risk(p), s.Args.why(p)
		}
	}
	return fmt.Sprintf("runs %d steps as one unit; the riskiest %s", len(a.Steps), why)
}

// Describe says what the plan does: its steps' operations.
func (a *PlanArgs) Describe() string {
	parts := make([]string, 0, len(a.Steps))
	for _, st := range a.Steps {
		parts = append(parts, string(st.Op))
	}
	return "plan (" + strings.Join(parts, ", ") + ")"
}

// SubjectBranch is the first branch a step is of.
func (a *PlanArgs) SubjectBranch() string {
	for _, s := range a.Steps {
		if s.Args == nil {
			continue
		}
		if b := s.Args.SubjectBranch(); b != "" {
			return b
		}
	}
	return ""
}

// StepLabels names a plan's steps, in order, as the UI shows them; nil
// for any other operation's arguments.
func StepLabels(a Args) []string {
	p, ok := a.(*PlanArgs)
	if !ok {
		return nil
	}
	out := make([]string, len(p.Steps))
	for i, s := range p.Steps {
		out[i] = s.Op.Label()
	}
	return out
}
