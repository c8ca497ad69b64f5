package app

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/sluicehq/sluice/core/apply"
	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/connect"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/oauth"
	"github.com/sluicehq/sluice/core/proposal"
)

// The TypeScript side of the UI's API is written from Go: the calls from
// uiRoutes, the types from the Go types of the methods' parameters and
// results (their JSON as encoding/json writes it), the events from
// uiEvents. GenerateUIClient is what `go generate ./app` writes to
// frontend/src/api.gen.ts.

// tsNames are the TypeScript names of Go types whose own name would be
// ambiguous or says less in the front end.
var tsNames = map[reflect.Type]string{
	// The decision the UI sends, beside journal.Decision, the decision a
	// proposal records.
	reflect.TypeFor[Decision]():       "DecisionRequest",
	reflect.TypeFor[proposal.State](): "ProposalState",
	// What SaveSettings takes, beside SettingsView, what it answers.
	reflect.TypeFor[config.Settings](): "SettingsInput",
	// Comment and Lock are also DOM types.
	reflect.TypeFor[journal.Comment](): "ReviewComment",
	reflect.TypeFor[apply.Lock]():      "GitLock",
	// The front end's names of the views it shows (its components are
	// named SettingsView, TimelineView, …).
	reflect.TypeFor[SettingsView](): "Settings",
	reflect.TypeFor[ClientInfo]():   "Client",
	// A remote connector known to the authorization server.
	reflect.TypeFor[oauth.Client]():         "Connector",
	reflect.TypeFor[SessionView]():          "AgentSession",
	reflect.TypeFor[WorkspaceView]():        "Workspace",
	reflect.TypeFor[WorkspaceRunView]():     "WorkspaceRun",
	reflect.TypeFor[WorkspaceImagesView]():  "WorkspaceImages",
	reflect.TypeFor[WorkspaceImageView]():   "WorkspaceImage",
	reflect.TypeFor[WorkspaceRuntimeView](): "WorkspaceRuntime",
	reflect.TypeFor[TimelineView]():         "Timeline",
	reflect.TypeFor[TimelineRow]():          "TimelineEvent",
	reflect.TypeFor[RestorePointRow]():      "RestorePoint",
	reflect.TypeFor[RestoreView]():          "RestoreResult",
	reflect.TypeFor[CardEvidence]():         "Evidence",
}

// tsEnum is a Go type whose JSON is one of a few strings: TypeScript gets
// the union of them, and ValuesName (when set) a list of them.
type tsEnum struct {
	Values     []string
	ValuesName string
}

// tsEnums are the Go types the UI's JSON carries as one of a few strings.
var tsEnums = map[reflect.Type]tsEnum{
	reflect.TypeFor[proposal.State](): {Values: stringsOf(proposal.States()), ValuesName: "proposalStates"},
	reflect.TypeFor[proposal.Risk](): {Values: stringsOf([]proposal.Risk{
		proposal.RiskLow, proposal.RiskMedium, proposal.RiskHigh, proposal.RiskDestructive})},
	reflect.TypeFor[proposal.Tense]():  {Values: stringsOf([]proposal.Tense{proposal.Future, proposal.Past, proposal.Unrealized})},
	reflect.TypeFor[proposal.Effect](): {Values: stringsOf([]proposal.Effect{proposal.EffectLands, proposal.EffectLoses})},
	reflect.TypeFor[connect.Scope]():   {Values: stringsOf([]connect.Scope{connect.ScopeUser, connect.ScopeProject})},
}

// tsFieldForms narrow fields that Go keeps as plain strings to the few
// values they hold, by "package.Type.jsonName".
var tsFieldForms = map[string]string{
	"journal.Comment.side": strconv.Quote(journal.SideNew) + " | " + strconv.Quote(journal.SideOld),
}

// tsForms are the TypeScript types of Go types that write their own JSON.
var tsForms = map[reflect.Type]string{
	reflect.TypeFor[time.Time]():          "string",
	reflect.TypeFor[proposal.Timestamp](): "string",
	// A proposal's arguments: an object of its operation's type.
	reflect.TypeFor[proposal.Args](): "Record<string, unknown> | null",
}

// stringsOf is vs as their JSON strings.
func stringsOf[T any](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err) // a constant of the enum that cannot be written
		}
		out[i], _ = strconv.Unquote(string(b))
	}
	return out
}

// GenerateUIClient is the text of frontend/src/api.gen.ts: the UI's API
// calls and events with every type they carry.
func GenerateUIClient() ([]byte, error) {
	g := &tsGen{decls: map[string]string{}, named: map[string]reflect.Type{}, in: map[reflect.Type]bool{}, out: map[reflect.Type]bool{}, formsUsed: map[string]bool{}}
	// What reaches Go only as an argument is decoded with every field
	// optional (a missing one is its zero value); what Go sends says which
	// fields it may leave out (omitempty).
	for _, rt := range uiRoutes {
		m, err := rt.method()
		if err != nil {
			return nil, err
		}
		g.mark(m.Type.Out(0), g.out)
		for i := range rt.Args {
			g.mark(m.Type.In(i+1), g.in)
		}
	}
	for _, ev := range uiEvents {
		if ev.Payload != nil {
			g.mark(ev.Payload, g.out)
		}
	}

	var calls bytes.Buffer
	for _, rt := range uiRoutes {
		if err := g.call(&calls, rt); err != nil {
			return nil, err
		}
	}
	var events bytes.Buffer
	var desktopOnly []string
	for _, ev := range uiEvents {
		t := "undefined"
		if ev.Payload != nil {
			var err error
			if t, err = g.typeOf(ev.Payload, ""); err != nil {
				return nil, fmt.Errorf("event %s: %w", ev.Name, err)
			}
		}
		if ev.Doc != "" {
			fmt.Fprintf(&events, "  /** %s */\n", ev.Doc)
		}
		fmt.Fprintf(&events, "  %q: %s;\n", ev.Name, t)
		if ev.DesktopOnly {
			desktopOnly = append(desktopOnly, strconv.Quote(ev.Name))
		}
	}
	for k := range tsFieldForms {
		if !g.formsUsed[k] {
			return nil, fmt.Errorf("tsFieldForms names %s, a field no call carries", k)
		}
	}

	var b bytes.Buffer
	b.WriteString(`// Code generated by "go generate ./app"; DO NOT EDIT.
//
// The UI's API as the route table in app/uiroutes.go declares it, with
// the Go types of its arguments, results and events. The transport
// (Wails binding or HTTP with the CSRF header) is in transport.ts.

import { call, omit, queryOf, seg } from "./transport";

`)
	names := make([]string, 0, len(g.decls))
	for n := range g.decls {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		b.WriteString(g.decls[n])
		b.WriteString("\n")
	}
	b.WriteString("/** The calls of the UI's API, one for each method of the Go API. */\nexport const api = {\n")
	b.Write(calls.Bytes())
	b.WriteString("};\n\n/** The app's events and what each carries. */\nexport interface EventPayloads {\n")
	b.Write(events.Bytes())
	b.WriteString("}\n\nexport type EventName = keyof EventPayloads;\n\n")
	b.WriteString("/** Events only the desktop app emits (through Wails, never on /api/events). */\n")
	fmt.Fprintf(&b, "export const desktopOnlyEvents: EventName[] = [%s];\n", strings.Join(desktopOnly, ", "))
	return b.Bytes(), nil
}

type tsGen struct {
	decls map[string]string       // TypeScript name → its declaration
	named map[string]reflect.Type // TypeScript name → the Go type it is
	in    map[reflect.Type]bool   // structs that reach Go as arguments
	out   map[reflect.Type]bool   // structs Go sends
	// formsUsed are the keys of tsFieldForms met.
	formsUsed map[string]bool
}

// mark records every struct type reachable from t in set.
func (g *tsGen) mark(t reflect.Type, set map[reflect.Type]bool) {
	for {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			t = t.Elem()
			continue
		}
		break
	}
	if t.Kind() != reflect.Struct || set[t] {
		return
	}
	set[t] = true
	for _, f := range jsonFieldsOf(t) {
		g.mark(f.typ, set)
	}
}

// goJSONField is a field as encoding/json writes it.
type goJSONField struct {
	name      string
	typ       reflect.Type
	omitempty bool
}

// jsonFieldsOf are the fields encoding/json writes for struct type st, in
// declaration order (an embedded struct's in its place).
func jsonFieldsOf(st reflect.Type) []goJSONField {
	var out []goJSONField
	for _, f := range reflect.VisibleFields(st) {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				continue // its fields are visible in its place
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, goJSONField{name: name, typ: f.Type, omitempty: slices.Contains(strings.Split(opts, ","), "omitempty")})
	}
	return out
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// typeOf is the TypeScript type of Go type t; where says where t was met.
func (g *tsGen) typeOf(t reflect.Type, where string) (string, error) {
	if f, ok := tsForms[t]; ok {
		return f, nil
	}
	if _, ok := tsEnums[t]; ok {
		return g.declare(t)
	}
	if t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) {
		return "", fmt.Errorf("%s: %s writes its own JSON: give its TypeScript form in tsForms", where, t)
	}
	if t.Kind() != reflect.String && (t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler)) {
		return "string", nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.typeOf(t.Elem(), where)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "string", nil
		}
		e, err := g.typeOf(t.Elem(), where+"[]")
		if err != nil {
			return "", err
		}
		if strings.ContainsAny(e, "|&") {
			e = "(" + e + ")"
		}
		return e + "[]", nil
	case reflect.Map:
		if t.Name() != "" && t.PkgPath() != "" {
			return g.declare(t)
		}
		if t.Key().Kind() != reflect.String {
			return "", fmt.Errorf("%s: a map keyed by %s", where, t.Key())
		}
		v, err := g.typeOf(t.Elem(), where+"[…]")
		if err != nil {
			return "", err
		}
		return "Record<string, " + v + ">", nil
	case reflect.Interface:
		return "unknown", nil
	case reflect.Struct:
		if t.Name() == "" {
			return g.object(t, "")
		}
		return g.declare(t)
	case reflect.String:
		return "string", nil
	case reflect.Bool:
		return "boolean", nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "number", nil
	}
	return "", fmt.Errorf("%s: no TypeScript form for %s", where, t)
}

// tsName is the TypeScript name of a named Go type.
func tsName(t reflect.Type) string {
	if n, ok := tsNames[t]; ok {
		return n
	}
	return t.Name()
}

// declare adds the declaration of named type t (once) and returns its
// name; two Go types of one name are an error to resolve in tsNames.
func (g *tsGen) declare(t reflect.Type) (string, error) {
	name := tsName(t)
	if prev, ok := g.named[name]; ok {
		if prev != t {
			return "", fmt.Errorf("%s and %s are both %s in TypeScript: name one in tsNames", prev, t, name)
		}
		return name, nil
	}
	g.named[name] = t
	g.decls[name] = "" // taken, for a type that refers to itself
	var decl string
	if e, ok := tsEnums[t]; ok {
		quoted := make([]string, len(e.Values))
		for i, v := range e.Values {
			quoted[i] = strconv.Quote(v)
		}
		decl = fmt.Sprintf("export type %s = %s;\n", name, strings.Join(quoted, " | "))
		if e.ValuesName != "" {
			decl += fmt.Sprintf("export const %s: %s[] = [%s];\n", e.ValuesName, name, strings.Join(quoted, ", "))
		}
	} else if t.Kind() == reflect.Map {
		v, err := g.typeOf(reflect.MapOf(t.Key(), t.Elem()), name)
		if err != nil {
			return "", err
		}
		decl = fmt.Sprintf("%sexport type %s = %s;\n", goNameNote(t, name), name, v)
	} else {
		obj, err := g.object(t, "")
		if err != nil {
			return "", err
		}
		decl = fmt.Sprintf("%sexport interface %s %s\n", goNameNote(t, name), name, obj)
	}
	g.decls[name] = decl
	return name, nil
}

// goNameNote is a comment naming t's Go name when TypeScript names it
// otherwise. (The package is left out: moving a type to another package
// changes nothing the front end sees.)
func goNameNote(t reflect.Type, name string) string {
	if t.Name() == name {
		return ""
	}
	return "/** Go's " + t.Name() + ". */\n"
}

// goName is t as Go code outside its package names it.
func goName(t reflect.Type) string {
	p := t.PkgPath()
	return p[strings.LastIndex(p, "/")+1:] + "." + t.Name()
}

// object is the TypeScript object type of struct t, indented by indent.
func (g *tsGen) object(t reflect.Type, indent string) (string, error) {
	var b strings.Builder
	b.WriteString("{\n")
	// A struct that only reaches Go is decoded with every field optional.
	onlyIn := g.in[t] && !g.out[t]
	for _, f := range jsonFieldsOf(t) {
		var ft string
		var err error
		if form, ok := tsFieldForms[goName(t)+"."+f.name]; ok {
			ft = form
			g.formsUsed[goName(t)+"."+f.name] = true
		} else if f.typ.Kind() == reflect.Struct && f.typ.Name() == "" {
			ft, err = g.object(f.typ, indent+"  ")
		} else {
			ft, err = g.typeOf(f.typ, t.String()+"."+f.name)
		}
		if err != nil {
			return "", err
		}
		if f.typ.Kind() == reflect.Pointer && !f.omitempty {
			ft += " | null" // nil is written as null
		}
		opt := ""
		if f.omitempty || onlyIn {
			opt = "?"
		}
		fmt.Fprintf(&b, "%s  %s%s: %s;\n", indent, tsKey(f.name), opt, ft)
	}
	b.WriteString(indent + "}")
	return b.String(), nil
}

// tsKey is a property name, quoted when it is not an identifier.
func tsKey(name string) string {
	for i, r := range name {
		if !(r == '_' || r == '$' || unicode.IsLetter(r) || (i > 0 && unicode.IsDigit(r))) {
			return strconv.Quote(name)
		}
	}
	return name
}

// call writes rt's entry of the api object: its parameters are the Go
// method's, named as the table names them; in the desktop window they go
// to the binding as they are, in the browser into the route's path, query
// and body as the table says.
func (g *tsGen) call(b *bytes.Buffer, rt uiRoute) error {
	m, err := rt.method()
	if err != nil {
		return err
	}
	result, err := g.typeOf(m.Type.Out(0), rt.Method+" result")
	if err != nil {
		return err
	}
	var params, args, query, bodyFields []string
	body := ""
	pathOf := map[string]string{} // path value → the expression that gives it
	for i, a := range rt.Args {
		pt := m.Type.In(i + 1)
		t, err := g.typeOf(pt, rt.Method+" argument "+a.Name)
		if err != nil {
			return err
		}
		params = append(params, a.Name+": "+t)
		args = append(args, a.Name)
		switch a.From {
		case fromPath:
			pathOf[a.Name] = a.Name
		case fromQuery:
			query = append(query, a.Name+"=${seg("+a.Name+")}")
		case fromQueryFields:
			var keys []string
			for _, f := range jsonFieldsOf(pt) {
				keys = append(keys, strconv.Quote(f.name))
			}
			query = append(query, "${queryOf("+a.Name+", ["+strings.Join(keys, ", ")+"])}")
		case fromBody:
			var drop []string
			for _, p := range rt.pathNames() {
				pathOf[p] = a.Name + "." + p
				drop = append(drop, strconv.Quote(p))
			}
			body = a.Name
			if len(drop) > 0 {
				body = "omit(" + a.Name + ", [" + strings.Join(drop, ", ") + "])"
			}
		case fromBodyField:
			bodyFields = append(bodyFields, a.Name)
		}
	}
	if len(bodyFields) > 0 {
		body = "{ " + strings.Join(bodyFields, ", ") + " }"
	}
	path := rt.Path
	for p, expr := range pathOf {
		path = strings.ReplaceAll(path, "{"+p+"}", "${seg("+expr+")}")
	}
	if len(query) > 0 {
		if strings.HasPrefix(query[0], "${") && len(query) == 1 {
			path += query[0]
		} else {
			path += "?" + strings.Join(query, "&")
		}
	}
	lit := strconv.Quote(path)
	if strings.Contains(path, "${") {
		lit = "`" + path + "`"
	}
	route := fmt.Sprintf("{ method: %q, path: %s", rt.Verb, lit)
	if body != "" {
		route += ", body: " + body
	}
	route += " }"
	if rt.Verb == http.MethodGet && body != "" {
		return fmt.Errorf("%s: a GET with a body", rt.Pattern())
	}
	if rt.Doc != "" {
		fmt.Fprintf(b, "  /** %s */\n", rt.Doc)
	}
	fmt.Fprintf(b, "  %s: (%s): Promise<%s> =>\n    call(%q, [%s], %s),\n",
		lowerFirst(rt.Method), strings.Join(params, ", "), result, rt.Method, strings.Join(args, ", "), route)
	return nil
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}
