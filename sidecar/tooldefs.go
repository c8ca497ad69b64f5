package sidecar

import (
	"fmt"
	"slices"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// An agent pays for every tool definition on every turn, so what tools/list
// carries is kept to what a model or client needs (docs/tools.md explains
// the budget). Output schemas are the largest part of it: they describe
// structuredContent for clients that validate it, and few clients show them
// to the model at all. So on the wire an output schema keeps the top level
// of the result exactly — every field, its type, whether it is required,
// and its description — and names only the type of anything nested. That
// stays a true description of every result (the SDK validates each one
// against it), while the full schema, nested fields and all, is kept here
// for the generated reference.

// fullOutputSchemas are the complete output schemas, by tool name, as
// derived from each tool's Out type.
var fullOutputSchemas sync.Map // string → *jsonschema.Schema

// compactOutputSchema derives the output schema of Out, records the full
// one under the tool's name and returns the compact one for the wire.
func compactOutputSchema[Out any](tool string) *jsonschema.Schema {
	full, err := jsonschema.For[Out](nil)
	if err != nil {
		// Out types are this package's own; one that has no schema is a
		// programming error found by every test that lists the tools.
		panic(fmt.Sprintf("sidecar: output schema of %s: %v", tool, err))
	}
	fullOutputSchemas.Store(tool, full)
	out := &jsonschema.Schema{
		Type:                 full.Type,
		Types:                full.Types,
		Required:             full.Required,
		AdditionalProperties: full.AdditionalProperties,
		PropertyOrder:        full.PropertyOrder,
		Properties:           map[string]*jsonschema.Schema{},
	}
	for name, p := range full.Properties {
		f := typeOnly(p)
		if !slices.Contains(full.Required, name) {
			// A field that is not required is omitted when empty (omitempty),
			// so it is never null on the wire.
			f.Types = slices.DeleteFunc(slices.Clone(f.Types), func(t string) bool { return t == "null" })
			if len(f.Types) == 1 {
				f.Type, f.Types = f.Types[0], nil
			}
		}
		if name != "error" {
			// The error field is the same on every tool and described once,
			// in the server instructions and the reference.
			f.Description = p.Description
		}
		out.Properties[name] = f
	}
	return out
}

// sharedOutputSchema is the wire output schema of a tool whose result
// another tool also returns: the same fields and types, described on one
// of them (describedOn) rather than on each, with a pointer there.
func sharedOutputSchema[Out any](tool, describedOn string) *jsonschema.Schema {
	out := compactOutputSchema[Out](tool)
	if tool == describedOn {
		return out
	}
	out.Description = "as " + describedOn + "'s output schema describes it"
	for _, p := range out.Properties {
		p.Description = ""
	}
	return out
}

// typeOnly keeps the type of a schema, and of an array's items.
func typeOnly(p *jsonschema.Schema) *jsonschema.Schema {
	if p == nil {
		return nil
	}
	t := &jsonschema.Schema{Type: p.Type, Types: p.Types, Enum: p.Enum}
	if p.Items != nil {
		t.Items = &jsonschema.Schema{Type: p.Items.Type, Types: p.Items.Types, Enum: p.Items.Enum}
	}
	return t
}

// fullOutputSchema is the complete output schema of a tool, or nil.
func fullOutputSchema(tool string) *jsonschema.Schema {
	if v, ok := fullOutputSchemas.Load(tool); ok {
		return v.(*jsonschema.Schema)
	}
	return nil
}
