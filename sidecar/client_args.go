package sidecar

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// InjectedArgument is an argument that an MCP client adds to every tool's
// input schema on its own and then sends with every call, although the
// server never declared it.
type InjectedArgument struct {
	Name string
	// Client is the client that adds it, and why.
	Client string
}

// InjectedArguments is the one list of such arguments. Sluice's input
// schemas refuse properties they do not declare (additionalProperties is
// false), which is what makes a misspelt argument an error the model can
// fix; an argument on this list is removed from a tools/call before the
// schema sees it, and any other unknown argument is still refused with an
// error naming it. No Sluice tool may declare a property of one of these
// names (a test checks), so removing it never loses an input.
var InjectedArguments = []InjectedArgument{
	{Name: "wait_for_previous", Client: "Gemini CLI: a boolean it adds to every MCP tool to order parallel calls, and passes to the server"},
}

// injectedArgsMiddleware removes InjectedArguments from every tools/call.
// It runs before every other middleware, so that the ledger fingerprints
// the arguments the tool actually received.
func (s *Sidecar) injectedArgsMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if call, ok := req.(*mcp.CallToolRequest); ok && method == "tools/call" && call.Params != nil {
			call.Params.Arguments = withoutInjected(call.Params.Arguments)
		}
		return next(ctx, method, req)
	}
}

// withoutInjected returns raw without the injected members, or raw itself
// when it is not a JSON object or has none of them (the schema then says
// what is wrong with it).
func withoutInjected(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return raw
	}
	removed := false
	for _, a := range InjectedArguments {
		if _, ok := obj[a.Name]; ok {
			delete(obj, a.Name)
			removed = true
		}
	}
	if !removed {
		return raw
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return raw
	}
	return out
}
