package sidecar

import (
	"context"
	"encoding/json"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/audit"
	"github.com/sluicehq/sluice/core/config"
)

// OpenLedger creates the private directories if needed and opens the
// shared audit ledger as configured.
func OpenLedger(cfg *config.Config) (*audit.Ledger, error) {
	if err := cfg.EnsureDirs(); err != nil {
		return nil, err
	}
	l, _, err := audit.SetupFor(cfg).Open()
	return l, err
}

// auditMiddleware records every tools/call in the ledger: which tool, for
// which agent, on which repository (hashed), with which arguments
// (fingerprinted, never written), the outcome and the duration. The ledger
// is the record of what agents did; a read whose entry cannot be written
// still answers (reads change nothing) and the sidecar reports itself as
// degraded from then on. So the answer does not wait on the disk either:
// the entry is in the ledger file before the answer goes out and synced
// within audit.SyncSoonWithin (AppendSoon). What a call changes is recorded
// durably by the app before it acts (a proposal, a decision, an execution).
func (s *Sidecar) auditMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		call, ok := req.(*mcp.CallToolRequest)
		if method != "tools/call" || !ok || s.ledger == nil {
			return next(ctx, method, req)
		}
		start := time.Now()
		res, err := next(ctx, method, req)
		e := audit.Entry{
			Tool:       call.Params.Name,
			SessionID:  s.agentName(call),
			DurationMS: time.Since(start).Milliseconds(),
			Result:     toolOutcome(res, err),
		}
		var args map[string]any
		if len(call.Params.Arguments) > 0 && json.Unmarshal(call.Params.Arguments, &args) == nil {
			if fp, ferr := audit.ArgsFingerprint(args); ferr == nil {
				e.ArgsFingerprint = fp
			}
			if p, ok := args["repoPath"].(string); ok && filepath.IsAbs(p) {
				e.RepoScope = audit.RepoScope(canonicalOrClean(p))
			}
		}
		if _, aerr := s.ledger.AppendSoon(e); aerr != nil {
			if s.auditDegraded.CompareAndSwap(false, true) {
				s.log.Error("audit ledger append failed; continuing degraded", "err", aerr)
			}
		}
		return res, err
	}
}

func toolOutcome(res mcp.Result, err error) string {
	if err != nil {
		return "protocol_error"
	}
	r, ok := res.(*mcp.CallToolResult)
	if !ok || r == nil || !r.IsError {
		return "ok"
	}
	var body struct {
		Error *ToolError `json:"error"`
	}
	if b, merr := json.Marshal(r.StructuredContent); merr == nil && json.Unmarshal(b, &body) == nil && body.Error != nil {
		return "error:" + string(body.Error.Code)
	}
	return "error"
}

// canonicalOrClean resolves symlinks when it can, so that one repository
// gets one scope however it was named.
func canonicalOrClean(p string) string {
	if c, err := filepath.EvalSymlinks(p); err == nil {
		return c
	}
	return filepath.Clean(p)
}
