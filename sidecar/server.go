package sidecar

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/audit"
	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/presence"
)

// Options configure a Sidecar.
type Options struct {
	Config *config.Config
	// Toolsets to expose; nil means the configured ones.
	Toolsets []string
	Logger   *slog.Logger
	// Gateway returns a client for the app's gateway. It is called per
	// request because the app may start (or restart on a new port) after
	// the sidecar. Nil means "read gateway.json from the config dir".
	Gateway func() (*gateway.Client, error)
	// Identity, when set, overrides clientInfo.name as the agent's
	// identity (HTTP transport: the bearer token's name).
	Identity string
	// Ledger records every tool call. The stdio and HTTP transports always
	// pass one (see OpenLedger); nil means no audit (in-process tests).
	// The caller owns it and closes it.
	Ledger *audit.Ledger
	// Presence is this process's presence file, kept current by every tool
	// call on a repository; nil means none (in-process tests). The caller
	// owns it and closes it.
	Presence *presence.File
	// Session, when set, is the confined session this sidecar serves (see
	// SessionView).
	Session *SessionView
	// Live, when set, is asked on every call for config.json as it is
	// now, so that roots, the workspace image and runtime and the pending
	// expiry the person saves while this process runs apply on the next
	// call. The transports share one per process; nil means Config as it
	// is (in-process tests).
	Live *config.Live
	// ws, when set, is the workspace tools' shared state of another
	// Sidecar of the same identity (HTTP: an earlier session of the token).
	ws *wsTools
}

// Sidecar holds one MCP server and what its tools share.
type Sidecar struct {
	cfg      *config.Config
	toolsets []string
	log      *slog.Logger
	gateway  func() (*gateway.Client, error)
	server   *mcp.Server
	identity string
	ledger   *audit.Ledger
	presence *presence.File
	// live and view are the configuration as config.json says now (see
	// Options.Live and conf).
	live *config.Live
	view atomic.Pointer[confView]
	// mu guards toolsets, which toolset_enable extends while the session
	// runs.
	mu sync.Mutex
	// ws is what the workspace toolsets share (see workspaceTools).
	ws *wsTools
	// auditDegraded is set once an audit append has failed.
	auditDegraded atomic.Bool
	// session is Options.Session.
	session *SessionView
	// allowedToolsets, when set, are the only toolsets toolset_enable
	// may add (an OAuth connector's scopes).
	allowedToolsets []string
}

// New builds the MCP server with the chosen toolsets. The sluice_capabilities
// tool is always present.
func New(opts Options) (*Sidecar, error) {
	if opts.Config == nil {
		return nil, errors.New("sidecar: nil config")
	}
	sets := opts.Toolsets
	if sets == nil {
		now := opts.Config
		if opts.Live != nil {
			// A session that starts after the person chose an image
			// gets the workspace tools.
			now = opts.Live.Current().Config
		}
		sets = fitToolsets(now, opts.Config.Toolsets)
	}
	if err := checkToolsets(sets); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Sidecar{cfg: opts.Config, toolsets: slices.Clone(sets), log: log, gateway: opts.Gateway, identity: opts.Identity, ledger: opts.Ledger, presence: opts.Presence, session: opts.Session, ws: opts.ws}
	s.live = opts.Live
	s.view.Store(newConfView(&config.Snapshot{Config: opts.Config}, log))
	if s.gateway == nil {
		path := opts.Config.GatewayFile()
		gw := &gatewayClients{}
		s.gateway = func() (*gateway.Client, error) { return gw.client(path, "") }
	}
	if opts.Identity != "" && opts.Session == nil {
		// The identity is the HTTP token's name, which this sidecar
		// authenticated; the app records that, so a rule made for the
		// token never approves a program that only calls itself by its
		// name. (A confined session's sidecar is known by its own token.)
		connect := s.gateway
		s.gateway = func() (*gateway.Client, error) {
			c, err := connect()
			if err != nil {
				return nil, err
			}
			return c.WithTokenIdentity(), nil
		}
	}
	s.server = mcp.NewServer(&mcp.Implementation{
		Name:    "sluice",
		Title:   "Sluice",
		Version: config.Version,
	}, &mcp.ServerOptions{
		Instructions: serverInstructions,
		Logger:       log,
		SchemaCache:  schemaCache,
		// Not go-sdk's default, which advertises logging: Sluice sends
		// no log messages through MCP (its log is stderr and the audit
		// ledger, and MCP 2026-07-28 deprecates logging), so it does not
		// claim the capability. Tools are added to it as they register.
		Capabilities: &mcp.ServerCapabilities{},
	})
	s.server.AddReceivingMiddleware(s.injectedArgsMiddleware, s.auditMiddleware, s.presenceMiddleware)
	s.registerCapabilities()
	enabled := []string{}
	for _, name := range config.KnownToolsets {
		if !slices.Contains(s.toolsets, name) {
			continue
		}
		// A toolset known to the configuration but not built into this
		// sidecar is left out rather than advertised empty.
		if fn := toolsetRegistration(name); fn != nil {
			fn(s)
			enabled = append(enabled, name)
		}
	}
	s.toolsets = enabled
	return s, nil
}

// confView is what the tools read from the configuration on one call.
type confView struct {
	snap *config.Snapshot
	// cfg is the configuration the call sees.
	cfg *config.Config
	// roots are the allowed roots, checked; rootsErr is set when the
	// configured ones are invalid (or config.json no longer loads), and
	// every tool that needs them then fails with it rather than guessing
	// (see checkRoots).
	roots    gitx.Roots
	rootsErr error
}

func newConfView(snap *config.Snapshot, log *slog.Logger) *confView {
	v := &confView{snap: snap, cfg: snap.Config}
	if snap.Err != nil {
		v.rootsErr = snap.Err
	} else {
		v.roots, v.rootsErr = gitx.NewRoots(snap.Config.AllowedRoots)
	}
	if v.rootsErr != nil {
		log.Error("invalid allowed roots", "err", v.rootsErr)
	}
	return v
}

// conf is the configuration for this call: config.json as it is now when
// the sidecar has a Live view of it (one stat per call; the file is read
// again only when it changed), else the configuration it was made with.
func (s *Sidecar) conf() *confView {
	v := s.view.Load()
	if s.live == nil {
		return v
	}
	snap := s.live.Current()
	if snap == v.snap {
		return v
	}
	nv := newConfView(snap, s.log)
	if snap.Err == nil {
		s.log.Info("configuration changed", "allowedRoots", snap.Config.AllowedRoots,
			"workspaceImage", snap.Config.WorkspaceImage, "workspaceRuntime", snap.Config.WorkspaceRuntime,
			"pendingExpiry", snap.Config.PendingExpiry)
	}
	// Two calls may race to store a view of the same snapshot; either
	// one is right.
	s.view.Store(nv)
	return nv
}

// fitToolsets fits the toolsets asked for (by --toolsets or the
// configuration) to the installation: the workspace toolsets only when a
// workspace image is configured, since without one its tools can only fail
// and a model would still pay for their definitions on every turn. They
// stay one toolset_enable away. Options.Toolsets, given in process, is
// taken as it is.
func fitToolsets(cfg *config.Config, sets []string) []string {
	out := []string{}
	for _, t := range sets {
		if needsImage(t) && cfg.WorkspaceRunImage() == "" {
			continue
		}
		out = append(out, t)
	}
	return out
}

// needsImage reports whether a toolset's tools all need a configured
// workspace image.
func needsImage(toolset string) bool {
	return toolset == "workspace" || toolset == "workspace_search"
}

// Server is the underlying MCP server, for transports and tests.
func (s *Sidecar) Server() *mcp.Server { return s.server }

// serverInstructions are sent once per session (initialize), so what
// every tool shares is said here rather than in each description.
const serverInstructions = `Sluice reads the person's git repositories and lets you propose changes that they approve in the Sluice app; ` +
	`nothing you propose runs until they do. Start with repo_brief. repoPath is an absolute path inside the allowed roots. ` +
	`propose_* tools are asynchronous: each needs a reason (shown to the person) and returns a proposalId at once; ` +
	`then call proposal_wait for the outcome. A failed call returns error {code, message}; the message names the next step. ` +
	`An idempotencyKey makes a retry return the first proposal. More tools (plans, worktrees, workspaces) are one toolset_enable away; sluice_capabilities lists them.`

// agentName is the attribution of a request: the HTTP token's name when
// there is one, else the sanitized clientInfo.name. It is attribution, not
// authentication.
func (s *Sidecar) agentName(req *mcp.CallToolRequest) string {
	if s.identity != "" {
		return s.identity
	}
	if req != nil {
		if ci := req.ClientInfo(); ci != nil {
			if n := SanitizeAgentName(ci.Name); n != "" {
				return n
			}
		}
	}
	return "unknown-agent"
}

var agentNameBad = regexp.MustCompile(`[^A-Za-z0-9._:-]+`)

// SanitizeAgentName keeps [A-Za-z0-9._:-], replaces runs of anything else
// with "-", and caps the result at 128 bytes.
func SanitizeAgentName(name string) string {
	n := agentNameBad.ReplaceAllString(name, "-")
	n = strings.Trim(n, "-")
	if len(n) > 128 {
		n = n[:128]
	}
	return n
}

// isProtocolError reports whether err must stay a JSON-RPC error rather
// than become a tool result.
func isProtocolError(err error) bool {
	var we *jsonrpc.Error
	return errors.As(err, &we)
}

func boolPtr(b bool) *bool { return &b }

// readOnly annotations for tools that change nothing.
func readOnly(title string) *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{Title: title, ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: boolPtr(false)}
}

// checkToolsets refuses a toolset name Sluice does not know.
func checkToolsets(sets []string) error {
	for _, t := range sets {
		if !slices.Contains(config.KnownToolsets, t) {
			return fmt.Errorf("sidecar: unknown toolset %q (known: %s)", t, strings.Join(config.KnownToolsets, ","))
		}
	}
	return nil
}
