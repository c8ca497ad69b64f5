package sidecar

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An agent pays for every tool definition on every turn, so what tools/list
// carries is kept to what a model or client needs (docs/tools.md explains
// the budget). Output schemas are the largest part of it: they describe
// structuredContent for clients that validate it, and few clients show them
// to the model at all. So on the wire an output schema keeps the top level
// of the result exactly — every field, its type, whether it is required,
// and its description — and names only the type of anything nested. That
// stays a true description of every result (the SDK validates each one
// against it), while the full schema, nested fields and all, is made here
// on demand for the generated reference.

// A serving sidecar does not derive the wire schemas: toolschemas_gen.go
// holds each tool's input and output schema as JSON, exactly as tools/list
// sends it, made from the tools' types by `go generate ./sidecar`
// (TestToolSchemas_Generated fails when it is stale). Deriving them by
// reflection, building the schema objects and marshalling them again on
// every tools/list was most of a sidecar's start and of what it allocated
// to start. The derivation below stays the source of truth: the generator
// runs it, and a tool the table does not know yet gets its schemas from it.

//go:generate go test . -run TestToolSchemas_Generated -update

// useSchemaTable says whether tools take their schemas from
// toolschemas_gen.go; only the generator turns it off, to derive them.
var useSchemaTable = true

// tableSchemas are the wire input and output schemas of a tool from
// toolschemas_gen.go, or ok false.
func tableSchemas(tool string) (in, out json.RawMessage, ok bool) {
	if !useSchemaTable {
		return nil, nil, false
	}
	i, o, ok := generatedSchemas(tool)
	if !ok {
		return nil, nil, false
	}
	return json.RawMessage(i), json.RawMessage(o), true
}

// derived is make's schema for tool, or nil when the tool's schemas come
// from the table (registerTool sets them): a tool definition names how its
// schema is derived without deriving it at every start.
func derived(tool string, make func() *jsonschema.Schema) any {
	if _, _, ok := tableSchemas(tool); ok {
		return nil
	}
	return make()
}

// fullOutputs make the complete output schemas, by tool name, as derived
// from each tool's Out type. They are made when the reference asks, not
// kept: a serving process needs only the compact ones, and the full ones
// (every nested field of every result) were the largest part of an idle
// sidecar's heap.
var fullOutputs sync.Map // string → func() *jsonschema.Schema

// compactOutputSchema derives the output schema of Out for the wire and
// notes how to make the full one under the tool's name. The compact schema
// is derived once per process and shared by every server it builds, so
// that the SDK resolves each once (schemaCache); nothing changes a schema
// once it is made.
func compactOutputSchema[Out any](tool string) *jsonschema.Schema {
	fullOutputs.Store(tool, fullSchemaOf[Out])
	if v, ok := compactOutputSchemas.Load(tool); ok {
		return v.(*jsonschema.Schema)
	}
	v, _ := compactOutputSchemas.LoadOrStore(tool, compactOf(topSchemaOf[Out]()))
	return v.(*jsonschema.Schema)
}

var compactOutputSchemas sync.Map // tool name → *jsonschema.Schema

// fullSchemaOf is the complete schema of Out.
func fullSchemaOf[Out any]() *jsonschema.Schema {
	full, err := jsonschema.For[Out](nil)
	if err != nil {
		// Out types are this package's own; one that has no schema is a
		// programming error found by every test that lists the tools.
		panic(fmt.Sprintf("sidecar: output schema of %s: %v", reflect.TypeFor[Out](), err))
	}
	return full
}

// topSchemaOf is the schema of Out as far as compactOf reads it: its top
// level is exact, and every Sluice struct type below it is a plain object.
// Inferring the nested schemas only for compactOf to drop them was most of
// what a sidecar allocated to start.
func topSchemaOf[Out any]() *jsonschema.Schema {
	full, err := jsonschema.For[Out](&jsonschema.ForOptions{TypeSchemas: nestedObjects(reflect.TypeFor[Out]())})
	if err != nil {
		panic(fmt.Sprintf("sidecar: output schema of %s: %v", reflect.TypeFor[Out](), err))
	}
	return full
}

// nestedObjects maps the Sluice struct types of t's fields to a plain
// object schema. A type that t embeds is left out: its fields are t's own
// (an override would replace them).
func nestedObjects(t reflect.Type) map[reflect.Type]*jsonschema.Schema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	fields := reflect.VisibleFields(t)
	embedded := map[reflect.Type]bool{t: true}
	for _, f := range fields {
		if f.Anonymous {
			embedded[elemOf(f.Type)] = true
		}
	}
	objects := map[reflect.Type]*jsonschema.Schema{}
	for _, f := range fields {
		e := elemOf(f.Type)
		if !f.Anonymous && e.Kind() == reflect.Struct && !embedded[e] && strings.HasPrefix(e.PkgPath(), "github.com/sluicehq/sluice/") {
			objects[e] = &jsonschema.Schema{Type: "object"}
		}
	}
	return objects
}

// elemOf is what t holds, through pointers, slices, arrays and maps.
func elemOf(t reflect.Type) reflect.Type {
	for {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			t = t.Elem()
		default:
			return t
		}
	}
}

// compactOf is the wire form of an output schema.
func compactOf(full *jsonschema.Schema) *jsonschema.Schema {
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
// of them (describedOn) rather than on each, with a pointer there. The
// tools that are not describedOn share one schema.
func sharedOutputSchema[Out any](tool, describedOn string) any {
	fullOutputs.Store(tool, fullSchemaOf[Out])
	if _, _, ok := tableSchemas(tool); ok {
		return nil
	}
	if tool == describedOn {
		return compactOutputSchema[Out](tool)
	}
	key := sharedKey{reflect.TypeFor[Out](), describedOn}
	if v, ok := sharedOutputSchemas.Load(key); ok {
		return v.(*jsonschema.Schema)
	}
	out := compactOf(topSchemaOf[Out]())
	out.Description = "as " + describedOn + "'s output schema describes it"
	for _, p := range out.Properties {
		p.Description = ""
	}
	v, _ := sharedOutputSchemas.LoadOrStore(key, out)
	return v.(*jsonschema.Schema)
}

// memoSchema is the schema kept under key for the process, made by make
// the first time.
func memoSchema(key any, make func() *jsonschema.Schema) *jsonschema.Schema {
	if v, ok := inputSchemas.Load(key); ok {
		return v.(*jsonschema.Schema)
	}
	v, _ := inputSchemas.LoadOrStore(key, make())
	return v.(*jsonschema.Schema)
}

var inputSchemas sync.Map // a tool's name, or its operation → *jsonschema.Schema

// sharedKey names a shared output schema: the result type, and the tool
// whose schema describes it.
type sharedKey struct {
	out         reflect.Type
	describedOn string
}

var sharedOutputSchemas sync.Map // sharedKey → *jsonschema.Schema

// schemaCache lets the SDK resolve a schema it has seen once per process:
// the inferred input schemas by type, and the shared output schemas by
// pointer. Every server this process builds (one per HTTP identity) uses
// it.
var schemaCache = mcp.NewSchemaCache()

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
	if v, ok := fullOutputs.Load(tool); ok {
		return v.(func() *jsonschema.Schema)()
	}
	return nil
}
