package app

import (
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
)

//go:generate go run ./internal/apigen -o ../frontend/src/api.gen.ts

// uiRoutes is the UI's JSON API, declared once: every exported method of
// API (bound into the desktop window by Wails under its own name), the
// HTTP route the headless server answers it on, and where each of the
// method's arguments comes from in a request. web.go registers the
// handlers from it, and `go generate ./app` writes the TypeScript client
// and its types (frontend/src/api.gen.ts) from it and from the methods'
// Go types; TestUIAPI_GeneratedClient_Current fails when that file is
// stale.
var uiRoutes = []uiRoute{
	{Method: "Status", Verb: http.MethodGet, Path: "/api/status"},
	{Method: "Ready", Verb: http.MethodPost, Path: "/api/ready", CSRF: true},
	{Method: "Shown", Verb: http.MethodPost, Path: "/api/shown", CSRF: true,
		Args: []uiArg{inBodyField("screen"), inBodyField("ids")},
		Doc:  "Tells the app which pending cards are on screen now."},

	{Method: "Pending", Verb: http.MethodGet, Path: "/api/proposals"},
	{Method: "History", Verb: http.MethodGet, Path: "/api/history", Args: []uiArg{inQueryFields("q")}},
	{Method: "Proposal", Verb: http.MethodGet, Path: "/api/proposals/{id}", Args: []uiArg{inPath("id")}},
	{Method: "ProposalDiff", Verb: http.MethodGet, Path: "/api/proposals/{id}/diff",
		Args: []uiArg{inPath("id"), inQuery("offset")}},
	{Method: "ProposalDiffFile", Verb: http.MethodGet, Path: "/api/proposals/{id}/diff/file",
		Args: []uiArg{inPath("id"), inQuery("path")},
		Doc:  "Where path's part of the diff starts, to load it however far down it is."},
	{Method: "ProposalImage", Verb: http.MethodGet, Path: "/api/proposals/{id}/image",
		Args: []uiArg{inPath("id"), inQuery("blob")},
		Doc:  "A PNG, JPEG, GIF or WebP blob of the sealed outcome as a data: URL (see proposalImageSrc)."},
	{Method: "ProposalAudit", Verb: http.MethodGet, Path: "/api/proposals/{id}/audit", Args: []uiArg{inPath("id")}},
	{Method: "Approve", Verb: http.MethodPost, Path: "/api/proposals/{id}/approve", CSRF: true,
		Args: []uiArg{inBody("d")}, MaxBody: maxRejectBody},
	{Method: "Reject", Verb: http.MethodPost, Path: "/api/proposals/{id}/reject", CSRF: true,
		Args: []uiArg{inBody("d")}, MaxBody: maxRejectBody},
	{Method: "SendBack", Verb: http.MethodPost, Path: "/api/proposals/{id}/send-back", CSRF: true,
		Args: []uiArg{inBody("d")}, MaxBody: maxRejectBody},
	{Method: "Retry", Verb: http.MethodPost, Path: "/api/proposals/{id}/retry", CSRF: true,
		Args: []uiArg{inBody("d")}, MaxBody: maxRejectBody,
		Doc: "Runs again a failure that changed nothing, bound to the digest shown."},
	{Method: "RemoveLocks", Verb: http.MethodPost, Path: "/api/proposals/{id}/locks/remove", CSRF: true,
		Args: []uiArg{inBody("r")},
		Doc:  "Removes exactly these lock files, each only if unchanged since shown."},
	{Method: "Preflight", Verb: http.MethodGet, Path: "/api/proposals/{id}/preflight", Args: []uiArg{inPath("id")}},

	{Method: "SuggestRule", Verb: http.MethodGet, Path: "/api/proposals/{id}/rule", Args: []uiArg{inPath("id")},
		Doc: `The rule "Approve and trust similar" would create from a pending card.`},
	{Method: "TrustSimilar", Verb: http.MethodPost, Path: "/api/proposals/{id}/trust", CSRF: true,
		Args: []uiArg{inBody("req")}},
	{Method: "Rules", Verb: http.MethodGet, Path: "/api/rules"},
	{Method: "AutoApprovals", Verb: http.MethodGet, Path: "/api/rules/approvals",
		Doc: "The newest proposals rules approved, newest first."},
	{Method: "RevokeRule", Verb: http.MethodPost, Path: "/api/rules/revoke", CSRF: true, Args: []uiArg{inBody("r")}},

	{Method: "Audit", Verb: http.MethodGet, Path: "/api/audit"},
	// Only a desktop window that found `sluice serve` running opens it;
	// the browser is told "unsupported", like any other window.
	{Method: "OpenRunning", Verb: http.MethodPost, Path: "/api/open-running", CSRF: true,
		Doc: "Desktop window only, opened while `sluice serve` runs: opens that one in the browser."},
	{Method: "VerifyAudit", Verb: http.MethodPost, Path: "/api/audit/verify", CSRF: true},

	{Method: "Timeline", Verb: http.MethodGet, Path: "/api/timeline", Args: []uiArg{inQuery("repo")}},
	{Method: "RestorePreview", Verb: http.MethodGet, Path: "/api/restore-preview",
		Args: []uiArg{inQuery("repo"), inQuery("restorePoint")}},
	{Method: "Restore", Verb: http.MethodPost, Path: "/api/restore", CSRF: true, Args: []uiArg{inBody("r")}},

	{Method: "Settings", Verb: http.MethodGet, Path: "/api/settings"},
	{Method: "SaveSettings", Verb: http.MethodPost, Path: "/api/settings", CSRF: true, Args: []uiArg{inBody("s")}},
	{Method: "AddRoot", Verb: http.MethodPost, Path: "/api/roots", CSRF: true, Args: []uiArg{inBodyField("dir")},
		Doc: "Allows agents to name repositories under dir (saved in config.json)."},

	{Method: "Clients", Verb: http.MethodGet, Path: "/api/connect"},
	{Method: "Connect", Verb: http.MethodPost, Path: "/api/connect", CSRF: true, Args: []uiArg{inBody("c")}},

	{Method: "ConnectorConsent", Verb: http.MethodGet, Path: "/api/connectors/consent/{id}", Args: []uiArg{inPath("id")},
		Doc: "A remote connector's authorization request waiting for the person."},
	{Method: "DecideConnector", Verb: http.MethodPost, Path: "/api/connectors/consent/{id}", CSRF: true,
		Args: []uiArg{inPath("id"), inBodyField("allow")},
		Doc:  "Allows or denies it; the answer says where the browser goes next."},
	{Method: "Connectors", Verb: http.MethodGet, Path: "/api/connectors"},
	{Method: "RevokeConnector", Verb: http.MethodPost, Path: "/api/connectors/revoke", CSRF: true, Args: []uiArg{inBody("r")},
		Doc: "Ends every token of a remote connector at once."},

	{Method: "Workspaces", Verb: http.MethodGet, Path: "/api/workspaces"},
	{Method: "Sessions", Verb: http.MethodGet, Path: "/api/sessions"},
	{Method: "StopSession", Verb: http.MethodPost, Path: "/api/sessions/{id}/stop", CSRF: true, Args: []uiArg{inPath("id")},
		Doc: "Stops a running confined session; what its agent left is offered as a card."},
	{Method: "OfferSessionChanges", Verb: http.MethodPost, Path: "/api/sessions/{id}/offer", CSRF: true, Args: []uiArg{inPath("id")},
		Doc: "Offers an ended session's kept changes again as a new card."},
	{Method: "WorkspaceImages", Verb: http.MethodGet, Path: "/api/workspace-images"},
	{Method: "UseWorkspaceImage", Verb: http.MethodPost, Path: "/api/workspace-images", CSRF: true, Args: []uiArg{inBodyField("ref")},
		Doc: "Pins a local image (by name or ID) in config.json for every sidecar."},
	{Method: "WorkspaceRuntime", Verb: http.MethodGet, Path: "/api/workspace-runtime"},
	{Method: "UseWorkspaceRuntime", Verb: http.MethodPost, Path: "/api/workspace-runtime", CSRF: true, Args: []uiArg{inBodyField("name")},
		Doc: `Saves the OCI runtime workspace runs use ("" for the Engine's default) in config.json.`},
	{Method: "StopWorkspace", Verb: http.MethodPost, Path: "/api/workspaces/{id}/stop", CSRF: true, Args: []uiArg{inPath("id")},
		Doc: "Ends the commands running in a workspace; the workspace and its files stay."},
	{Method: "DestroyWorkspace", Verb: http.MethodPost, Path: "/api/workspaces/{id}/destroy", CSRF: true, Args: []uiArg{inPath("id")},
		Doc: "Removes a workspace with its files and runs; refused while its changes are an open card."},
	{Method: "GrantWorkspace", Verb: http.MethodPost, Path: "/api/workspaces/{id}/grants", CSRF: true, Args: []uiArg{inBody("g")},
		Doc: "A person's grant: a secret for the workspace's runs, or the hosts they may reach."},
}

// uiRoute is one call of the UI's API.
type uiRoute struct {
	// Method is the exported method of API that answers it, and the name
	// of its Wails binding; the TypeScript call is named Method with a
	// lower-case first letter.
	Method string
	Verb   string // GET or POST
	// Path is a net/http pattern's path: {name} is a path value.
	Path string
	// Args says where each of Method's parameters comes from, in order.
	Args []uiArg
	// CSRF requires the session's CSRF token (every state change does).
	CSRF bool
	// MaxBody bounds the JSON body (maxDecisionBody when 0).
	MaxBody int64
	// Doc is the TypeScript call's comment.
	Doc string
}

// argFrom is where an argument of an API method comes from in a request.
type argFrom int

const (
	// fromPath is the path value Name ({Name} in the path).
	fromPath argFrom = iota
	// fromQuery is the query parameter Name: a string, or a number.
	fromQuery
	// fromQueryFields is a struct whose JSON fields are each a query
	// parameter; an empty one is left out of the query.
	fromQueryFields
	// fromBody is the whole JSON body. A field of it that the path names
	// ({id}) comes from the path: the client leaves it out of the body,
	// and a body that names another is refused.
	fromBody
	// fromBodyField is the field Name of a JSON object body.
	fromBodyField
)

// uiArg is one argument of an API method; Name is its wire name and the
// TypeScript parameter's.
type uiArg struct {
	Name string
	From argFrom
}

func inPath(name string) uiArg        { return uiArg{name, fromPath} }
func inQuery(name string) uiArg       { return uiArg{name, fromQuery} }
func inQueryFields(name string) uiArg { return uiArg{name, fromQueryFields} }
func inBody(name string) uiArg        { return uiArg{name, fromBody} }
func inBodyField(name string) uiArg   { return uiArg{name, fromBodyField} }

// Pattern is the route's net/http pattern.
func (rt uiRoute) Pattern() string { return rt.Verb + " " + rt.Path }

// pathNames are the {name} path values of the route, in order.
func (rt uiRoute) pathNames() []string {
	var out []string
	for _, seg := range strings.Split(rt.Path, "/") {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(seg, "{"), "}"))
		}
	}
	return out
}

// method is rt.Method's type on *API, checked against Args: every
// parameter has a source, and a method returns (T, error).
func (rt uiRoute) method() (reflect.Method, error) {
	m, ok := reflect.TypeFor[*API]().MethodByName(rt.Method)
	if !ok {
		return m, fmt.Errorf("%s: API has no method %s", rt.Pattern(), rt.Method)
	}
	if n := m.Type.NumIn() - 1; n != len(rt.Args) {
		return m, fmt.Errorf("%s: API.%s takes %d arguments, the route names %d", rt.Pattern(), rt.Method, n, len(rt.Args))
	}
	if m.Type.NumOut() != 2 || m.Type.Out(1) != reflect.TypeFor[error]() {
		return m, fmt.Errorf("%s: API.%s does not return (T, error)", rt.Pattern(), rt.Method)
	}
	paths := rt.pathNames()
	bodies, whole := 0, false
	for i, a := range rt.Args {
		pt := m.Type.In(i + 1)
		switch a.From {
		case fromPath:
			if pt.Kind() != reflect.String || !slices.Contains(paths, a.Name) {
				return m, fmt.Errorf("%s: argument %s is not a string path value of the route", rt.Pattern(), a.Name)
			}
		case fromQuery:
			if k := pt.Kind(); k != reflect.String && k != reflect.Int {
				return m, fmt.Errorf("%s: query parameter %s is a %s, not a string or int", rt.Pattern(), a.Name, pt)
			}
		case fromQueryFields:
			if pt.Kind() != reflect.Struct {
				return m, fmt.Errorf("%s: argument %s is not a struct of query parameters", rt.Pattern(), a.Name)
			}
		case fromBody:
			bodies++
			whole = true
			for _, p := range paths {
				if pt.Kind() != reflect.Struct || jsonFieldIndex(pt, p) == nil || jsonFieldType(pt, p).Kind() != reflect.String {
					return m, fmt.Errorf("%s: the body %s has no string field %q for the path value", rt.Pattern(), a.Name, p)
				}
			}
		case fromBodyField:
			bodies++
		}
	}
	if whole && bodies > 1 {
		return m, fmt.Errorf("%s: a whole body cannot share the body with another argument", rt.Pattern())
	}
	if bodies > 0 && rt.Verb != http.MethodPost {
		return m, fmt.Errorf("%s: only a POST has a body", rt.Pattern())
	}
	if (rt.Verb == http.MethodPost) != rt.CSRF {
		return m, fmt.Errorf("%s: a POST changes state and needs the CSRF token; a GET must not", rt.Pattern())
	}
	return m, nil
}

// jsonFieldIndex is the index path of the field encoding/json names
// name in struct type st (embedded structs included), or nil.
func jsonFieldIndex(st reflect.Type, name string) []int {
	for _, f := range reflect.VisibleFields(st) {
		if !f.IsExported() || f.Anonymous {
			continue
		}
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		if tag == name {
			return f.Index
		}
	}
	return nil
}

func jsonFieldType(st reflect.Type, name string) reflect.Type {
	return st.FieldByIndex(jsonFieldIndex(st, name)).Type
}

// handler is the HTTP handler of rt: it reads the method's arguments from
// the request as Args says, calls it on api, and answers with its result
// or its error (see jsonCall).
func (rt uiRoute) handler(api *API) (http.HandlerFunc, error) {
	m, err := rt.method()
	if err != nil {
		return nil, err
	}
	fn := reflect.ValueOf(api).Method(m.Index)
	max := rt.MaxBody
	if max == 0 {
		max = maxDecisionBody
	}
	// The arguments that are fields of one JSON object body are decoded
	// into a struct made for them, so that an unknown field is refused as
	// for any other body.
	var fieldsType reflect.Type
	var fieldArgs []int
	var sf []reflect.StructField
	for i, a := range rt.Args {
		if a.From == fromBodyField {
			sf = append(sf, reflect.StructField{
				Name: fmt.Sprintf("F%d", i), Type: m.Type.In(i + 1),
				Tag: reflect.StructTag(`json:"` + a.Name + `"`),
			})
			fieldArgs = append(fieldArgs, i)
		}
	}
	if len(sf) > 0 {
		fieldsType = reflect.StructOf(sf)
	}
	paths := rt.pathNames()
	return func(rw http.ResponseWriter, r *http.Request) {
		in := make([]reflect.Value, len(rt.Args))
		q := r.URL.Query()
		if fieldsType != nil {
			v := reflect.New(fieldsType)
			if !decodeBodyMax(rw, r, v.Interface(), max) {
				return
			}
			for j, i := range fieldArgs {
				in[i] = v.Elem().Field(j)
			}
		}
		for i, a := range rt.Args {
			pt := m.Type.In(i + 1)
			switch a.From {
			case fromPath:
				in[i] = reflect.ValueOf(r.PathValue(a.Name)).Convert(pt)
			case fromQuery:
				v := reflect.New(pt).Elem()
				s := q.Get(a.Name)
				if pt.Kind() == reflect.Int {
					n := 0
					if s != "" {
						if _, err := fmt.Sscanf(s, "%d", &n); err != nil {
							writeAPIError(rw, http.StatusBadRequest, errcode.InvalidArgument, a.Name+" must be a number")
							return
						}
					}
					v.SetInt(int64(n))
				} else {
					v.SetString(s)
				}
				in[i] = v
			case fromQueryFields:
				v := reflect.New(pt).Elem()
				for _, f := range reflect.VisibleFields(pt) {
					name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
					s := q.Get(name)
					if s == "" || !f.IsExported() {
						continue
					}
					switch f.Type.Kind() {
					case reflect.String:
						v.FieldByIndex(f.Index).SetString(s)
					case reflect.Int:
						// A limit that is not a number is no limit.
						n := 0
						fmt.Sscanf(s, "%d", &n)
						v.FieldByIndex(f.Index).SetInt(int64(n))
					}
				}
				in[i] = v
			case fromBody:
				v := reflect.New(pt)
				if !decodeBodyMax(rw, r, v.Interface(), max) {
					return
				}
				for _, p := range paths {
					f := v.Elem().FieldByIndex(jsonFieldIndex(pt, p))
					if got := f.String(); got != "" && got != r.PathValue(p) {
						writeAPIError(rw, http.StatusBadRequest, errcode.InvalidArgument, "the body's "+p+" does not match the URL")
						return
					}
					f.SetString(r.PathValue(p))
				}
				in[i] = v.Elem()
			}
		}
		out := fn.Call(in)
		jsonCall(rw, func() (any, error) {
			err, _ := out[1].Interface().(error)
			return out[0].Interface(), err
		})
	}, nil
}

// registerUIRoutes adds a handler for every route of uiRoutes to mux,
// each behind the session check (and the CSRF check where the route says
// so).
func (w *Web) registerUIRoutes(mux *http.ServeMux) {
	for _, rt := range uiRoutes {
		h, err := rt.handler(w.api)
		if err != nil {
			// The table is checked by TestUIAPI_RouteTable_CoversAPI: a
			// wrong row never reaches a build that runs.
			panic(err)
		}
		if rt.CSRF {
			h = w.csrf(h)
		}
		mux.HandleFunc(rt.Pattern(), w.authed(h))
	}
}
