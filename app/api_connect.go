package app

import (
	"errors"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/connect"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/tokens"
)

// ClientInfo is one agent client on the Connect screen.
type ClientInfo struct {
	Client      string          `json:"client"`
	DisplayName string          `json:"displayName"`
	Scopes      []connect.Scope `json:"scopes"`
	// Path is the user-scope configuration file ("" for clients without
	// one, such as ChatGPT).
	Path   string `json:"path"`
	Format string `json:"format"`
	// Preview is exactly what `sluice-sidecar config --client NAME`
	// prints for the user scope.
	Preview   string   `json:"preview"`
	PreAllows []string `json:"preAllows"`
	// PreAllowNote says what the pre-allowed tools can do, or why nothing
	// could be pre-allowed (the plan's own words).
	PreAllowNote string `json:"preAllowNote"`
	Problem      string `json:"problem,omitempty"`
}

// ConnectRequest asks to write one client's configuration.
type ConnectRequest struct {
	Client  string `json:"client"`
	Scope   string `json:"scope"`
	Project string `json:"project"`
}

// ConnectResult says what was written.
type ConnectResult struct {
	Client     string   `json:"client"`
	Path       string   `json:"path"`
	BackupPath string   `json:"backupPath"`
	Changed    bool     `json:"changed"`
	PreAllowed []string `json:"preAllowed"`
	Message    string   `json:"message"`
}

func (a *App) connectOptions(client, scope, project string) connect.Options {
	return connect.Options{Client: client, Scope: connect.Scope(scope), ProjectDir: project,
		Command: sidecarPath(), Toolsets: a.cfg.Toolsets}
}

// Clients lists every supported client with the configuration Sluice would
// write for it (the same plan `sluice-sidecar config` makes).
func (api *API) Clients() ([]ClientInfo, error) {
	out := []ClientInfo{}
	for _, c := range connect.Clients() {
		info := ClientInfo{Client: c.Name, DisplayName: c.Title, Scopes: append([]connect.Scope{}, c.Scopes...), PreAllows: []string{}}
		plan, err := connect.Make(api.app.connectOptions(c.Name, "", ""))
		if err != nil {
			info.Problem = err.Error()
			out = append(out, info)
			continue
		}
		var b strings.Builder
		plan.Describe(&b)
		info.Preview = b.String()
		info.Format = "steps"
		if len(plan.Files) > 0 {
			info.Path, info.Format = plan.Files[0].Path, plan.Files[0].Format
		}
		if plan.PreAllowed != nil {
			info.PreAllows = plan.PreAllowed
		}
		info.PreAllowNote = plan.PreAllowNote
		out = append(out, info)
	}
	return out, nil
}

// Connect writes a client's configuration: a backup first, then the file
// atomically; a second run changes nothing. For ChatGPT, which connects
// over HTTP, it creates the access token and shows it once.
func (api *API) Connect(r ConnectRequest) (ConnectResult, error) {
	plan, err := connect.Make(api.app.connectOptions(r.Client, r.Scope, r.Project))
	if err != nil {
		if errors.Is(err, connect.ErrUnknownClient) || errors.Is(err, connect.ErrScope) || errors.Is(err, connect.ErrBadOptions) || errors.Is(err, connect.ErrMalformed) {
			return ConnectResult{}, &errcode.Error{Code: errcode.InvalidArgument, Msg: err.Error()}
		}
		return ConnectResult{}, err
	}
	res := ConnectResult{Client: plan.Client, Changed: plan.Changed(), PreAllowed: plan.PreAllowed}
	if res.PreAllowed == nil {
		res.PreAllowed = []string{}
	}
	applied, err := plan.Apply(time.Now())
	if err != nil {
		if errors.Is(err, connect.ErrReadOnly) || errors.Is(err, connect.ErrChanged) || errors.Is(err, connect.ErrConflict) {
			return ConnectResult{}, &errcode.Error{Code: errcode.InvalidArgument, Msg: err.Error()}
		}
		return ConnectResult{}, err
	}
	if len(applied.Written) > 0 {
		res.Path = applied.Written[0]
	} else if len(plan.Files) > 0 {
		res.Path = plan.Files[0].Path
	}
	if len(applied.Backups) > 0 {
		res.BackupPath = applied.Backups[0]
	}
	switch {
	case plan.TokenName != "":
		secret, err := tokens.Open(tokens.DefaultPath(api.app.cfg)).Create(plan.TokenName)
		if errors.Is(err, tokens.ErrExists) {
			res.Message = "A token named " + plan.TokenName + " already exists and tokens are shown only once. Revoke it with `sluice-sidecar token revoke --name " + plan.TokenName + "` to make a new one. " + strings.Join(plan.Steps, " ")
		} else if err != nil {
			return ConnectResult{}, err
		} else {
			res.Message = "Token (shown only this once): " + secret + ". " + strings.Join(plan.Steps, " ")
		}
	case !res.Changed:
		res.Message = "Already configured; nothing changed."
	default:
		res.Message = "Configuration written. Restart " + plan.Title + " (or reload its MCP servers) to pick up Sluice."
	}
	return res, nil
}
