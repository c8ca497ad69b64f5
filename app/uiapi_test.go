package app

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// The UI's API is written down three times: API's exported methods (the
// Wails bindings), their routes in web.go, and frontend/src/api.ts, which
// names a binding and a route for each call and copies the Go types by
// hand. These tests read web.go and api.ts and fail when the three drift.

// webOnlyRoutes are the /api/ routes that belong to the headless server
// itself, not to a method of API.
var webOnlyRoutes = []string{"GET /api/session", "GET /api/events", "/api/"}

// apiMethods are API's exported methods by name.
func apiMethods() map[string]reflect.Method {
	out := map[string]reflect.Method{}
	t := reflect.TypeFor[*API]()
	for i := range t.NumMethod() {
		m := t.Method(i)
		out[m.Name] = m
	}
	return out
}

// webRoute is what web.go's source says of one route.
type webRoute struct {
	// methods are the API methods its handler calls: w.api.X in the
	// handler, or in a method of Web the handler names (w.history).
	methods []string
	// query are the query parameters it reads (q.Get("repo")).
	query []string
	// body are the JSON fields of a struct of its own the handler decodes
	// the body into; nil when it decodes the type the method takes.
	body []string
}

// webRoutes are the routes of the UI's route table, as the checks below
// compare them with api.ts.
func webRoutes(t *testing.T) map[string]webRoute {
	t.Helper()
	out := map[string]webRoute{}
	for _, rt := range uiRoutes {
		r := webRoute{methods: []string{rt.Method}}
		m, err := rt.method()
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range rt.Args {
			switch a.From {
			case fromQuery:
				r.query = append(r.query, a.Name)
			case fromQueryFields:
				for n := range jsonFields(m.Type.In(i + 1)) {
					r.query = append(r.query, n)
				}
			case fromBodyField:
				r.body = append(r.body, a.Name)
			}
		}
		out[rt.Pattern()] = r
	}
	for _, p := range webOnlyRoutes {
		out[p] = webRoute{}
	}
	return out
}

// Every method of API has a route in web.go, and every /api/ route but the
// server's own calls exactly one method.
func TestUIAPI_WebRoutes_MatchMethods(t *testing.T) {
	methods := apiMethods()
	routed := map[string]bool{}
	for pattern, route := range webRoutes(t) {
		called := route.methods
		_, path, _ := strings.Cut(pattern, " ")
		if !strings.HasPrefix(path, "/api/") && !strings.HasPrefix(pattern, "/api/") {
			continue
		}
		if slices.Contains(webOnlyRoutes, pattern) {
			if len(called) != 0 {
				t.Errorf("web.go: %q is listed as the server's own but calls API.%s", pattern, strings.Join(called, ", API."))
			}
			continue
		}
		if len(called) != 1 {
			t.Errorf("web.go: %q calls %d API methods %v, want exactly one", pattern, len(called), called)
		}
		for _, m := range called {
			routed[m] = true
		}
	}
	for name := range methods {
		if !routed[name] {
			t.Errorf("API.%s has no route in web.go: the browser cannot call it", name)
		}
	}
}

// tsCall is one entry of api.ts's api object: a call of call<T>(binding,
// args, route).
type tsCall struct {
	key     string
	params  map[string]*tsType // the arrow function's parameters
	result  *tsType
	binding string
	args    []tsExpr // the binding's positional arguments
	method  string   // GET or POST
	path    string   // normalized: "/api/proposals/{}/diff"
	query   []string // the query parameters the path names
	body    *tsExpr  // what a POST sends, if anything
}

// queryNames are the parameter names in the query string of an api.ts
// path; a substitution there (a whole query string) names none.
func queryNames(p string) []string {
	_, q, ok := strings.Cut(p, "?")
	if !ok {
		return nil
	}
	var out []string
	for _, kv := range strings.Split(q, "&") {
		if k, _, ok := strings.Cut(kv, "="); ok {
			out = append(out, k)
		}
	}
	return out
}

// normalizeRoute turns a Go pattern's wildcards and an api.ts template's
// path substitutions into {}, and drops a query string (a substitution
// that does not follow a slash is one).
func normalizeRoute(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch {
		case p[i] == '?':
			return b.String()
		case p[i] == '{' || (p[i] == '$' && i+1 < len(p) && p[i+1] == '{'):
			if p[i] == '$' {
				i++
			}
			depth := 0
			j := i
			for ; j < len(p); j++ {
				if p[j] == '{' {
					depth++
				} else if p[j] == '}' {
					depth--
					if depth == 0 {
						break
					}
				}
			}
			if strings.HasSuffix(b.String(), "/") {
				b.WriteString("{}")
			}
			i = j
		default:
			b.WriteByte(p[i])
		}
	}
	return b.String()
}

// api.ts names, for every call, a binding that is a method of API, with
// as many arguments as it takes, and a route web.go serves by calling that
// same method; and every method has a call.
func TestUIAPI_FrontendCalls_MatchMethods(t *testing.T) {
	methods := apiMethods()
	routes := map[string]webRoute{}
	for pattern, r := range webRoutes(t) {
		routes[normalizeRoute(pattern)] = r
	}
	ts := readAPITS(t)
	called := map[string]bool{}
	for _, c := range ts.calls {
		m, ok := methods[c.binding]
		if !ok {
			t.Errorf("api.ts %s calls the binding %q, which API does not have", c.key, c.binding)
			continue
		}
		called[c.binding] = true
		if want := m.Type.NumIn() - 1; len(c.args) != want {
			t.Errorf("api.ts %s passes %d arguments to %s, which takes %d", c.key, len(c.args), c.binding, want)
		}
		route := c.method + " " + c.path
		served, ok := routes[route]
		if !ok {
			t.Errorf("api.ts %s uses the route %q, which web.go does not serve", c.key, route)
			continue
		}
		if !slices.Contains(served.methods, c.binding) {
			t.Errorf("api.ts %s binds %s but its route %q calls %v", c.key, c.binding, route, served.methods)
		}
		for _, q := range c.query {
			if !slices.Contains(served.query, q) {
				t.Errorf("api.ts %s sends the query parameter %q, which %q does not read (it reads %v)", c.key, q, route, served.query)
			}
		}
		if c.body == nil {
			continue
		}
		// The server refuses a body with a field it does not know.
		accepted := served.body
		if accepted == nil && m.Type.NumIn() > 1 {
			if st := m.Type.In(1); st.Kind() == reflect.Struct {
				for n := range jsonFields(st) {
					accepted = append(accepted, n)
				}
			}
		}
		sent, err := ts.keys(*c.body, c.params)
		if err != nil {
			t.Errorf("api.ts %s: %v", c.key, err)
		}
		for _, k := range sent {
			if !slices.Contains(accepted, k) {
				t.Errorf("api.ts %s sends %q to %q, which takes only %v", c.key, k, route, accepted)
			}
		}
	}
	for name := range methods {
		if !called[name] {
			t.Errorf("API.%s has no call in api.ts", name)
		}
	}
}

// The types crossing the boundary have the same fields on both sides:
// what a method returns is the TypeScript type call<T> names, field by
// field (json names; omitempty is an optional field) and down through the
// nested types; what api.ts passes a binding names only fields Go has
// (all of them, when it is a value of a declared type).
func TestUIAPI_FrontendTypes_MatchGo(t *testing.T) {
	ts := readAPITS(t)
	methods := apiMethods()
	// One check for all calls: a type shared by several is reported once.
	ck := &typeCheck{t: t, ts: ts, seen: map[string]bool{}}
	for _, c := range ts.calls {
		m, ok := methods[c.binding]
		if !ok {
			continue // reported by TestUIAPI_FrontendCalls_MatchMethods
		}
		ck.compare(m.Type.Out(0), c.result, true, c.key+" result")
		for i, a := range c.args {
			if i+1 >= m.Type.NumIn() {
				break
			}
			ck.arg(m.Type.In(i+1), a, c.params, fmt.Sprintf("%s argument %d", c.key, i+1))
		}
	}
}

type typeCheck struct {
	t    *testing.T
	ts   *tsFile
	seen map[string]bool
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// arg checks one argument api.ts passes a binding against the Go parameter.
func (ck *typeCheck) arg(gt reflect.Type, a tsExpr, params map[string]*tsType, where string) {
	switch {
	case a.ident != "":
		if pt := params[a.ident]; pt != nil {
			ck.compare(gt, pt, false, where)
		}
	case a.object != nil:
		for gt.Kind() == reflect.Pointer {
			gt = gt.Elem()
		}
		if gt.Kind() != reflect.Struct {
			ck.t.Errorf("%s: api.ts passes an object, Go takes %s", where, gt)
			return
		}
		fields := jsonFields(gt)
		for _, p := range a.object {
			if p.spread != "" {
				st := ck.ts.resolve(params[p.spread])
				if st == nil || st.kind != tsObject {
					ck.t.Errorf("%s: cannot see the fields of ...%s", where, p.spread)
					continue
				}
				for _, f := range st.fields {
					if _, ok := fields[f.name]; !ok {
						ck.t.Errorf("%s: api.ts sends %q (from ...%s), which Go's %s does not have", where, f.name, p.spread, gt)
					}
				}
				continue
			}
			f, ok := fields[p.key]
			if !ok {
				ck.t.Errorf("%s: api.ts sends %q, which Go's %s does not have", where, p.key, gt)
				continue
			}
			if p.value.ident != "" || p.value.object != nil {
				ck.arg(f.typ, p.value, params, where+"."+p.key)
			}
		}
	}
}

type goField struct {
	typ       reflect.Type
	omitempty bool
}

// jsonFields are the fields encoding/json writes for struct type st.
func jsonFields(st reflect.Type) map[string]goField {
	out := map[string]goField{}
	for i := range st.NumField() {
		f := st.Field(i)
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
				for k, v := range jsonFields(et) {
					if _, ok := out[k]; !ok {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = goField{typ: f.Type, omitempty: slices.Contains(strings.Split(opts, ","), "omitempty")}
	}
	return out
}

// compare checks Go type gt against TypeScript type tt: the same field
// names, and for what Go returns (out), a field Go omits when empty is
// optional. (api.ts may call a field optional that Go always sends: the
// UI then only checks for it needlessly.)
func (ck *typeCheck) compare(gt reflect.Type, tt *tsType, out bool, where string) {
	t := ck.t
	tt = ck.ts.resolve(tt)
	if tt == nil {
		t.Errorf("%s: api.ts names a type it does not declare", where)
		return
	}
	if tt.kind == tsUnion {
		// null or undefined besides one type: check that one.
		var rest []*tsType
		for _, a := range tt.alts {
			if a = ck.ts.resolve(a); a != nil && !(a.kind == tsRef && (a.name == "null" || a.name == "undefined")) {
				rest = append(rest, a)
			}
		}
		if len(rest) == 1 {
			tt = rest[0]
		}
	}
	if tt.kind == tsRef && (tt.name == "unknown" || tt.name == "any") {
		return
	}
	if gt.Implements(marshalerType) || reflect.PointerTo(gt).Implements(marshalerType) {
		return // its own JSON form
	}
	if gt.Implements(textMarshalerType) || gt == reflect.TypeFor[time.Time]() {
		ck.primitive("string", tt, where)
		return
	}
	switch gt.Kind() {
	case reflect.Pointer:
		ck.compare(gt.Elem(), tt, out, where)
	case reflect.Slice, reflect.Array:
		if gt.Elem().Kind() == reflect.Uint8 {
			ck.primitive("string", tt, where)
			return
		}
		if tt.kind != tsArray {
			t.Errorf("%s: Go has a list (%s), api.ts %s", where, gt, tt)
			return
		}
		ck.compare(gt.Elem(), tt.elem, out, where+"[]")
	case reflect.Map:
		if tt.kind == tsRef && tt.name == "Record" && len(tt.args) == 2 {
			ck.compare(gt.Elem(), tt.args[1], out, where+"[…]")
			return
		}
		t.Errorf("%s: Go has a map (%s), api.ts %s", where, gt, tt)
	case reflect.Interface:
	case reflect.Struct:
		if tt.kind != tsObject {
			t.Errorf("%s: Go has a struct (%s), api.ts %s", where, gt, tt)
			return
		}
		key := fmt.Sprintf("%s|%p|%v", gt, tt, out)
		if ck.seen[key] {
			return
		}
		ck.seen[key] = true
		fields := jsonFields(gt)
		var names []string
		for n := range fields {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			f := fields[n]
			tf := tt.field(n)
			if tf == nil {
				t.Errorf("%s: Go's %s has %q, api.ts does not", where, gt, n)
				continue
			}
			if out && f.omitempty && !tf.optional {
				t.Errorf("%s: Go's %s omits %q when empty; api.ts should mark it optional (%s?:)", where, gt, n, n)
			}
			ck.compare(f.typ, tf.typ, out, where+"."+n)
		}
		for _, tf := range tt.fields {
			if _, ok := fields[tf.name]; !ok {
				t.Errorf("%s: api.ts has %q, which Go's %s does not", where, tf.name, gt)
			}
		}
	case reflect.String:
		ck.primitive("string", tt, where)
	case reflect.Bool:
		ck.primitive("boolean", tt, where)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		ck.primitive("number", tt, where)
	default:
		t.Errorf("%s: no rule for Go's %s", where, gt)
	}
}

// primitive checks that tt admits the JSON primitive Go sends.
func (ck *typeCheck) primitive(want string, tt *tsType, where string) {
	alts := []*tsType{tt}
	if tt.kind == tsUnion {
		alts = tt.alts
	}
	for _, a := range alts {
		a = ck.ts.resolve(a)
		if a == nil {
			continue
		}
		if (a.kind == tsRef && a.name == want) || (a.kind == tsLiteral && a.literalOf == want) {
			return
		}
		if a.kind == tsUnion {
			ok := true
			for _, b := range a.alts {
				if b.kind != tsLiteral || b.literalOf != want {
					ok = false
				}
			}
			if ok {
				return
			}
		}
	}
	ck.t.Errorf("%s: Go sends a %s, api.ts has %s", where, want, tt)
}
