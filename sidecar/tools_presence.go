package sidecar

import (
	"context"
	"encoding/json"
	"net/http/httptrace"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/presence"
	"github.com/sluicehq/sluice/core/proposal"
)

// PresenceIn names the repository.
type PresenceIn struct {
	RepoPath string `json:"repoPath" jsonschema:"the repository"`
}

// PresenceAgent is another agent working in the repository.
type PresenceAgent struct {
	Name     string     `json:"name" jsonschema:"the agent: its MCP client name, HTTP token name, or process name"`
	Version  string     `json:"version,omitempty" jsonschema:"client version, when it said"`
	Kind     string     `json:"kind" jsonschema:"sidecar (it uses Sluice) or process (an agent process running in the repository, Linux only)"`
	PID      int        `json:"pid" jsonschema:"process id"`
	State    string     `json:"state" jsonschema:"working (a Sluice call here in the last 2 minutes), open (running with the repository in scope), or recent (its session ended within 24 hours)"`
	LastCall *time.Time `json:"lastCall,omitempty" jsonschema:"time of its last Sluice call here"`
	LastTool string     `json:"lastTool,omitempty" jsonschema:"its last Sluice tool here"`
	Where    string     `json:"where" jsonschema:"the repository or the directory inside it where the agent works"`
	Paths    []string   `json:"paths,omitempty" jsonschema:"paths it last proposed to change here"`
}

// PresenceOut lists the other agents.
type PresenceOut struct {
	Repo   string          `json:"repo" jsonschema:"canonical repository path"`
	Agents []PresenceAgent `json:"agents" jsonschema:"other agents in this repository, working first"`
	Note   string          `json:"note" jsonschema:"how to read this"`
	ErrorField
}

func (s *Sidecar) registerPresence() {
	addTool(s.server, &mcp.Tool{
		Name:  "agents_presence",
		Title: "Other agents in a repository",
		Description: "Other agents working in a repository now or recently, with the paths they proposed to change. Use it " +
			"before proposing, to keep clear of another agent's work; it blocks nothing.",
		Annotations: readOnly("Other agents in a repository"),
	}, s.agentsPresence)
}

func (s *Sidecar) agentsPresence(_ context.Context, req *mcp.CallToolRequest, in PresenceIn) (PresenceOut, error) {
	if err := s.checkRoots(); err != nil {
		return PresenceOut{}, err
	}
	repo, err := s.conf().roots.Confine(in.RepoPath)
	if err != nil {
		return PresenceOut{}, err
	}
	agents := s.otherAgents(repo, s.agentName(req))
	out := PresenceOut{Repo: repo, Agents: []PresenceAgent{}, Note: "Informational only: Sluice never blocks a proposal because another agent is present."}
	for _, a := range agents {
		out.Agents = append(out.Agents, PresenceAgent{
			Name: a.Name, Version: a.Version, Kind: a.Kind, PID: a.PID, State: a.State,
			LastCall: a.LastCall, LastTool: a.LastTool, Where: a.Repo, Paths: a.Paths,
		})
	}
	return out, nil
}

// otherAgents are the agents in repo other than this session: other
// sidecars and agent processes, plus (HTTP transport) other token
// identities served by this same process.
func (s *Sidecar) otherAgents(repo, self string) []presence.Agent {
	agents, err := presence.Detect(presence.DetectOptions{Dir: s.cfg.PresenceDir(), Repo: repo, SelfPID: os.Getpid()})
	if err != nil {
		s.log.Warn("presence scan failed", "err", err)
	}
	if s.presence != nil {
		rec := s.presence.Snapshot()
		for _, r := range rec.Repos {
			if r.Agent == "" || r.Agent == self || !presence.Related(r.Path, repo) {
				continue
			}
			last := r.LastCall
			state := presence.StateOpen
			if time.Since(last) <= presence.WorkingWindow {
				state = presence.StateWorking
			}
			agents = append(agents, presence.Agent{Kind: "sidecar", PID: rec.PID, Name: r.Agent, State: state, LastCall: &last, LastTool: r.LastTool, Repo: r.Path, Paths: r.Paths})
		}
	}
	return agents
}

// OtherAgent is the informational hint a proposal carries about other
// agents in its repository (field "otherAgents" of a propose tool's
// result).
type OtherAgent struct {
	Name             string   `json:"name" jsonschema:"the other agent"`
	Kind             string   `json:"kind" jsonschema:"sidecar or process"`
	State            string   `json:"state" jsonschema:"working, open or recent"`
	LastTool         string   `json:"lastTool,omitempty" jsonschema:"its last Sluice tool in this repository"`
	OverlappingPaths []string `json:"overlappingPaths,omitempty" jsonschema:"paths of this proposal that the other agent also proposed to change"`
}

// otherAgentsHint is for the propose family: the other agents in repo, with
// the paths they proposed that this proposal also touches. It never fails
// and never blocks; nil means nobody else is there.
func (s *Sidecar) otherAgentsHint(req *mcp.CallToolRequest, repo string, paths []string) []OtherAgent {
	var out []OtherAgent
	for _, a := range s.otherAgents(repo, s.agentName(req)) {
		out = append(out, OtherAgent{Name: a.Name, Kind: a.Kind, State: a.State, LastTool: a.LastTool, OverlappingPaths: presence.Overlap(paths, a.Paths)})
	}
	return out
}

// proposalPresence is the one call the propose family makes for a
// proposal. The context it returns is the one to send the proposal with:
// once the request is written, the scan for the other agents in the
// repository starts, while the app seals the proposal, instead of after
// its answer (it reads every process's working directory and every
// presence file, a few milliseconds on a machine of 700 processes; started
// before the request is out, it would delay the request on a busy
// machine). The function it returns, called once the
// proposal was accepted, records the files the proposal touches in this
// process's presence file and returns the hint about the other agents
// with the files they proposed that this proposal touches too
// (ProposalOut.OtherAgents); what this process records is not part of the
// scan (its own entries are left out). It never fails and never blocks.
func (s *Sidecar) proposalPresence(ctx context.Context, req *mcp.CallToolRequest, repo string, args proposal.Args) (context.Context, func() []OtherAgent) {
	files, _ := args.FilesTouched()
	hint := make(chan []OtherAgent, 1)
	var once sync.Once
	scan := func() {
		once.Do(func() { go func() { hint <- s.otherAgentsHint(req, repo, files) }() })
	}
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { scan() }})
	return ctx, func() []OtherAgent {
		s.notePresencePaths(req, repo, req.Params.Name, files)
		scan()
		return <-hint
	}
}

// notePresencePaths records the repository-relative paths a proposal
// touches, so that other agents' proposals can be told about the overlap.
// The propose family calls it after a proposal is accepted.
func (s *Sidecar) notePresencePaths(req *mcp.CallToolRequest, repo, tool string, paths []string) {
	if s.presence == nil {
		return
	}
	if paths == nil {
		paths = []string{}
	}
	if err := s.presence.Note(presence.Activity{Repo: repo, Tool: tool, Agent: s.agentName(req), Paths: paths}); err != nil {
		s.log.Warn("presence update failed", "err", err)
	}
}

// presenceMiddleware keeps this process's presence file current: after
// every successful tool call that named a repository inside the allowed
// roots, the repository, the tool and the agent are recorded. Failures are
// logged, never returned: presence is informational.
func (s *Sidecar) presenceMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		call, ok := req.(*mcp.CallToolRequest)
		if s.presence == nil || method != "tools/call" || !ok || err != nil {
			return res, err
		}
		if r, ok := res.(*mcp.CallToolResult); !ok || r == nil || r.IsError {
			return res, err
		}
		var args struct {
			RepoPath string `json:"repoPath"`
		}
		if len(call.Params.Arguments) == 0 || json.Unmarshal(call.Params.Arguments, &args) != nil || args.RepoPath == "" {
			return res, err
		}
		repo, cerr := s.conf().roots.Confine(args.RepoPath)
		if cerr != nil {
			return res, err
		}
		// Over HTTP one process serves many agents; each repository entry
		// carries its agent, and the file's client stays the transport's.
		if ci := call.Session.InitializeParams(); s.identity == "" && ci != nil && ci.ClientInfo != nil {
			s.presence.SetClient(presence.ClientInfo{Name: SanitizeAgentName(ci.ClientInfo.Name), Version: SanitizeAgentName(ci.ClientInfo.Version)})
		}
		if perr := s.presence.Note(presence.Activity{Repo: repo, Tool: call.Params.Name, Agent: s.agentName(call)}); perr != nil {
			s.log.Warn("presence update failed", "err", perr)
		}
		return res, err
	}
}
