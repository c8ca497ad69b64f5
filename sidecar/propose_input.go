package sidecar

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// A propose_<op> tool takes ProposeCommon and the fields of the input
// core/proposal declares for its operation (proposal.NewInput), flat in
// one object; a plan, whose operation has no input, takes steps, each op
// and the fields of that op's input. So a new operation's tool is one row
// of the tool table: its schema and its decoding come from here.

// planSteps is what propose_plan takes beside ProposeCommon.
type planSteps struct {
	Steps []json.RawMessage `json:"steps" jsonschema:"1 to 10, run in order"`
}

// proposeArgs are a propose tool's arguments as they came; the handler
// decodes them once the schema has checked them.
type proposeArgs struct{ raw []byte }

func (p *proposeArgs) UnmarshalJSON(b []byte) error {
	p.raw = append([]byte(nil), b...)
	return nil
}

// addProposeTool registers the propose tool name of row t: decode the
// input to arguments, then submit.
func addProposeTool(s *Sidecar, name string, t proposeTool) {
	tool := &mcp.Tool{
		Name:        name,
		Title:       t.title,
		Description: t.description,
		InputSchema: derived(name, func() *jsonschema.Schema {
			return memoSchema(t.op, func() *jsonschema.Schema { return proposeSchema(t.op) })
		}),
		Annotations: &mcp.ToolAnnotations{
			Title:           t.title,
			ReadOnlyHint:    false,
			DestructiveHint: boolPtr(t.destructive),
			IdempotentHint:  false,
			OpenWorldHint:   boolPtr(false),
		},
	}
	addStatusTool(s, tool, true, func(ctx context.Context, req *mcp.CallToolRequest, in proposeArgs) (ProposalOut, error) {
		common, args, err := decodePropose(t.op, in.raw)
		if err != nil {
			return ProposalOut{}, err
		}
		return s.submitProposal(ctx, req, common, args)
	})
}

// proposeSchema is the input schema of op's tool: ProposeCommon's
// properties, then the operation's own, as embedding both in one struct
// would give them.
func proposeSchema(op proposal.Op) *jsonschema.Schema {
	s := boundedSchema[ProposeCommon]()
	var part *jsonschema.Schema
	if in := proposal.NewInput(op); in != nil {
		var err error
		part, err = jsonschema.ForType(reflect.TypeOf(in).Elem(), nil)
		if err != nil {
			panic(err)
		}
		boundSchema(part, "")
		if e, ok := in.(interface{ Enums() map[string][]string }); ok {
			for prop, values := range e.Enums() {
				part.Properties[prop].Enum = enumOf(values)
			}
		}
	} else {
		part = boundedSchema[planSteps]()
	}
	for _, prop := range part.PropertyOrder {
		s.Properties[prop] = part.Properties[prop]
	}
	s.PropertyOrder = append(s.PropertyOrder, part.PropertyOrder...)
	s.Required = append(s.Required, part.Required...)
	return s
}

// decodePropose decodes a propose tool's arguments, which the schema
// checked, into the common fields and the operation's arguments.
func decodePropose(op proposal.Op, raw []byte) (ProposeCommon, proposal.Args, error) {
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	var common ProposeCommon
	if err := json.Unmarshal(raw, &common); err != nil {
		return common, nil, errcode.Wrap(errcode.InvalidArgument, err, "the arguments do not decode")
	}
	in := proposal.NewInput(op)
	if in == nil {
		var p planSteps
		if err := json.Unmarshal(raw, &p); err != nil {
			return common, nil, errcode.Wrap(errcode.InvalidArgument, err, "the steps do not decode")
		}
		a, err := planArgs(p.Steps)
		return common, a, err
	}
	if err := json.Unmarshal(raw, in); err != nil {
		return common, nil, errcode.Wrap(errcode.InvalidArgument, err, "the arguments do not decode")
	}
	return common, in.Args(), nil
}

// inputFields are the JSON names of an operation's input fields, in
// their order (nil when it has no input).
func inputFields(op proposal.Op) []string {
	in := proposal.NewInput(op)
	if in == nil {
		return nil
	}
	t := reflect.TypeOf(in).Elem()
	var out []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// planStepFieldNames are the fields any plan step takes: op and the
// fields of every plan-step operation's input.
func planStepFieldNames() []string {
	out := []string{"op"}
	for _, op := range proposal.PlanStepOps() {
		for _, f := range inputFields(op) {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

// planArgs converts the steps. A step that sets a field of another
// step's operation is refused with the fields its own takes; a field no
// step takes is refused as such; what is missing or malformed is left to
// validation, as for the single-op tools.
func planArgs(steps []json.RawMessage) (proposal.Args, error) {
	a := &proposal.PlanArgs{}
	known := planStepFieldNames()
	for i, raw := range steps {
		stepErr := func(err error) error {
			return &errcode.Error{Code: errcode.InvalidArgument, Msg: fmt.Sprintf(
				"steps[%d]: %v; a step is op and the arguments propose_<op> takes, other than repoPath, reason and idempotencyKey", i, err)}
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil {
			return nil, stepErr(err)
		}
		var op proposal.Op
		if v, ok := fields["op"]; ok {
			if err := json.Unmarshal(v, &op); err != nil {
				return nil, stepErr(fmt.Errorf("op: %v", err))
			}
		}
		names := make([]string, 0, len(fields))
		for k := range fields {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if !slices.Contains(known, k) {
				return nil, stepErr(fmt.Errorf("json: unknown field %q", k))
			}
		}
		if !op.PlanStep() {
			// Validation names the ops a step may have.
			a.Steps = append(a.Steps, proposal.PlanStep{Op: op})
			continue
		}
		takes := inputFields(op)
		for _, k := range names {
			if k != "op" && !slices.Contains(takes, k) && !zeroJSON(fields[k]) {
				return nil, &errcode.Error{Code: errcode.InvalidArgument, Msg: fmt.Sprintf(
					"steps[%d]: a %s step takes %s (as propose_%s does), not %s; move %s to a step of its own",
					i, op, strings.Join(takes, ", "), op, k, k)}
			}
		}
		in := proposal.NewInput(op)
		if err := json.Unmarshal(raw, in); err != nil {
			return nil, stepErr(err)
		}
		a.Steps = append(a.Steps, proposal.PlanStep{Op: op, Args: in.Args()})
	}
	return a, nil
}

// zeroJSON reports whether a value says nothing: "", false or null.
func zeroJSON(v json.RawMessage) bool {
	switch strings.TrimSpace(string(v)) {
	case `""`, "false", "null":
		return true
	}
	return false
}
