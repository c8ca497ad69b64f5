package sidecar

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// A tool whose schemas come from toolschemas_gen.go is registered with
// Server.AddTool and the handler below, which does what go-sdk's typed
// AddTool (v1.8.0, toolForErr) does around a call — validate the
// arguments and apply their defaults, decode them, call, marshal and
// validate the output — with one difference: the schemas are resolved for
// validation on the tool's first call, once per process, not for every
// tool when the server is built. Resolving them all was most of a
// sidecar's start and of its heap at rest, for tools most sessions never
// call. What a client sees is unchanged (TestToolSchemas_Generated).

// resolvedTool is a tool's schemas resolved for validation.
type resolvedTool struct {
	in, out *jsonschema.Resolved
}

// resolvedTools holds, by tool name, the function that resolves its
// schemas once (sync.OnceValues).
var resolvedTools sync.Map // string → func() (resolvedTool, error)

// resolvedFor resolves the named tool's schemas on first use.
func resolvedFor(tool string, in, out json.RawMessage) (resolvedTool, error) {
	f, ok := resolvedTools.Load(tool)
	if !ok {
		f, _ = resolvedTools.LoadOrStore(tool, sync.OnceValues(func() (resolvedTool, error) {
			var r resolvedTool
			var err error
			if r.in, err = resolveRaw(in); err != nil {
				return r, fmt.Errorf("input schema: %w", err)
			}
			if r.out, err = resolveRaw(out); err != nil {
				return r, fmt.Errorf("output schema: %w", err)
			}
			return r, nil
		}))
	}
	return f.(func() (resolvedTool, error))()
}

// resolveRaw resolves a schema as go-sdk resolves one given to AddTool.
func resolveRaw(raw json.RawMessage) (*jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	return s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
}

// lazyToolHandler is go-sdk's typed tool handler for h, with the schemas
// in and out resolved on the first call.
func lazyToolHandler[In, Out any](tool string, in, out json.RawMessage, h mcp.ToolHandlerFor[In, Out]) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		rt, err := resolvedFor(tool, in, out)
		if err != nil {
			// The table is checked to resolve (TestToolSchemas_Generated).
			return nil, fmt.Errorf("tool %q: %w", tool, err)
		}
		var input json.RawMessage
		if req.Params.Arguments != nil {
			input = req.Params.Arguments
		}
		input, err = applySchema(input, rt.in, false)
		if err != nil {
			var errRes mcp.CallToolResult
			errRes.SetError(fmt.Errorf("validating \"arguments\": %v", err))
			return &errRes, nil
		}
		var args In
		if input != nil {
			if err := unmarshalStrict(input, &args); err != nil {
				var errRes mcp.CallToolResult
				errRes.SetError(err)
				return &errRes, nil
			}
		}
		res, outv, err := h(ctx, req, args)
		if err != nil {
			if wireErr, ok := err.(*jsonrpc.Error); ok {
				return nil, wireErr
			}
			var errRes mcp.CallToolResult
			errRes.SetError(err)
			return &errRes, nil
		}
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		var outval any = outv
		if res.InputRequests != nil {
			outval = nil
		}
		if outval != nil {
			outbytes, err := json.Marshal(outval)
			if err != nil {
				return nil, fmt.Errorf("marshaling output: %w", err)
			}
			outJSON, err := applySchema(outbytes, rt.out, true)
			if err != nil {
				return nil, fmt.Errorf("validating tool output: %w", err)
			}
			res.StructuredContent = json.RawMessage(outJSON)
			if res.Content == nil {
				res.Content = []mcp.Content{&mcp.TextContent{Text: string(outJSON)}}
			} else if !isObjectJSON(outJSON) {
				res.Content = append(res.Content, &mcp.TextContent{Text: string(outJSON)})
			}
		}
		return res, nil
	}
}

// applySchema validates data against resolved and applies its defaults,
// as go-sdk does (mcp.applySchema).
func applySchema(data json.RawMessage, resolved *jsonschema.Resolved, forOutput bool) (json.RawMessage, error) {
	if resolved == nil {
		return data, nil
	}
	var unmarshaled any
	if !forOutput {
		v := make(map[string]any)
		if len(data) > 0 {
			if err := unmarshalStrict(data, &v); err != nil {
				return nil, fmt.Errorf("unmarshaling arguments: %w", err)
			}
		}
		unmarshaled = v
	} else if len(data) > 0 {
		if err := unmarshalStrict(data, &unmarshaled); err != nil {
			return nil, fmt.Errorf("unmarshaling output: %w", err)
		}
	}
	appliedDefaults := false
	if _, ok := unmarshaled.(map[string]any); ok {
		if err := resolved.ApplyDefaults(&unmarshaled); err != nil {
			return nil, fmt.Errorf("applying schema defaults:\n%w", err)
		}
		appliedDefaults = true
	} else if forOutput && unmarshaled == nil && resolved.Schema().Type == "object" {
		unmarshaled = make(map[string]any)
		if err := resolved.ApplyDefaults(&unmarshaled); err != nil {
			return nil, fmt.Errorf("applying schema defaults:\n%w", err)
		}
		appliedDefaults = true
	}
	if err := resolved.Validate(&unmarshaled); err != nil {
		return nil, err
	}
	if !appliedDefaults {
		return data, nil
	}
	out, err := json.Marshal(unmarshaled)
	if err != nil {
		return nil, fmt.Errorf("marshalling with defaults: %v", err)
	}
	return out, nil
}

// maxJSONDepth and errMaxJSONDepth are go-sdk's bound on nesting.
const maxJSONDepth = 1000

var errMaxJSONDepth = errors.New("json: exceeded maximum nesting depth of 1000")

// unmarshalStrict decodes as go-sdk decodes a client's JSON: nesting
// bounded, field names matched exactly.
func unmarshalStrict(data []byte, v any) error {
	if err := checkJSONDepth(data); err != nil {
		return err
	}
	dec := segjson.NewDecoder(bytes.NewReader(data))
	dec.DontMatchCaseInsensitiveStructFields()
	return dec.Decode(v)
}

func checkJSONDepth(data []byte) error {
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > maxJSONDepth {
				return errMaxJSONDepth
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}

// isObjectJSON reports whether data is a JSON object.
func isObjectJSON(data []byte) bool {
	for _, b := range data {
		switch b {
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			return true
		default:
			return false
		}
	}
	return false
}
