// Package fakemodel is a fake model provider for tests: an HTTP server on
// 127.0.0.1 that speaks the Anthropic Messages, OpenAI Chat Completions and
// Responses, and Gemini APIs, and plays a script of tool calls. Real agent
// CLIs pointed at it run their real tool loop (their own shell, their MCP
// servers) with no login and no network. Only tests import it.
package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// A fake model on 127.0.0.1 that speaks a provider's HTTP API and plays a
// script: one tool call per turn, in order, then a line of text. Which turn
// it is comes from the conversation the agent sends back (how many tool
// results it holds), so the agent's own retries and side requests (titles,
// summaries: requests that offer no tools) never move the script on.

// Call is one tool call, named as the agent names the tool.
type Call struct {
	Tool string
	Args map[string]any
	// RetryWhile repeats the call, as a model would, while its result
	// contains this text (at most maxRetries times): an agent that
	// refreshes its tool list after a list_changed notification does so
	// on its own time, and the call goes through once it has.
	RetryWhile string
	// RetryUnless repeats the call while its result lacks this text: an
	// agent whose shell tool now and then returns a command's output cut
	// short is asked again, as a model would.
	RetryUnless string
}

const maxRetries = 20

// Model is one scripted model.
type Model struct {
	Calls []Call
	// Mark is a tool-name fragment present only in the requests of the
	// agent's main loop (e.g. "repo_brief").
	Mark string
	// OnTurn, when set, is called with each turn's index before the call
	// is sent: a test looks at the world while the agent waits.
	OnTurn func(i int)

	mu sync.Mutex
	// results are the tool results the agent sent back, in order.
	results []string
	log     []string
	start   time.Time
}

// turn returns the call to make next, or nil for the closing text.
func (m *Model) turn(toolsOffered bool, results []string) *Call {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(results) > len(m.results) {
		m.results = append([]string(nil), results...)
	}
	if !toolsOffered {
		return nil
	}
	i, tries := 0, 0
	for _, r := range results {
		if i >= len(m.Calls) {
			break
		}
		c := m.Calls[i]
		again := (c.RetryWhile != "" && strings.Contains(r, c.RetryWhile)) || (c.RetryUnless != "" && !strings.Contains(r, c.RetryUnless))
		if again && tries < maxRetries {
			tries++
			continue
		}
		i, tries = i+1, 0
	}
	if i >= len(m.Calls) {
		return nil
	}
	if m.OnTurn != nil {
		m.OnTurn(i)
	}
	return &m.Calls[i]
}

func (m *Model) note(format string, a ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.start.IsZero() {
		m.start = time.Now()
	}
	m.log = append(m.log, fmt.Sprintf("%6.1fs ", time.Since(m.start).Seconds())+fmt.Sprintf(format, a...))
}

// Results returns the tool results the agent reported, in order.
func (m *Model) Results() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.results...)
}

// Log is what the model saw, for a failing test's message.
func (m *Model) Log() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return strings.Join(m.log, "\n")
}

// ClosingText is the model's last answer, once the script is played.
const ClosingText = "Done: Sluice answered."

// textOf flattens a JSON value's strings (tool result content comes in
// many shapes).
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			b.WriteString(x)
			b.WriteByte('\n')
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return b.String()
}

func sse(w http.ResponseWriter, events [][2]string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	for _, e := range events {
		if e[0] != "" {
			fmt.Fprintf(w, "event: %s\n", e[0])
		}
		fmt.Fprintf(w, "data: %s\n\n", e[1])
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Start serves m with handler on 127.0.0.1.
func Start(t *testing.T, m *Model, handler func(*Model, http.ResponseWriter, *http.Request, []byte)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m.note("%s %s %d bytes", r.Method, r.URL.Path, len(body))
		handler(m, w, r, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Anthropic speaks the Messages API (POST /v1/messages), streamed
// or not.
func Anthropic(m *Model, w http.ResponseWriter, r *http.Request, body []byte) {
	if !strings.HasSuffix(r.URL.Path, "/v1/messages") {
		if strings.Contains(r.URL.Path, "count_tokens") {
			io.WriteString(w, `{"input_tokens": 10}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
		return
	}
	var req struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(body, &req)
	offered := false
	var names []string
	for _, tl := range req.Tools {
		names = append(names, tl.Name)
		if strings.Contains(tl.Name, m.Mark) {
			offered = true
		}
	}
	m.note("tools offered: %v", names)
	if !offered && strings.Contains(string(body), m.Mark) {
		m.note("the mark appears outside the tool list: %s", excerpt(string(body), m.Mark))
	}
	var results []string
	for _, msg := range req.Messages {
		var blocks []struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(msg.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				results = append(results, textOf(b.Content))
			}
		}
	}
	call := m.turn(offered, results)
	id := fmt.Sprintf("msg_%d", len(results))
	usage := map[string]int{"input_tokens": 10, "output_tokens": 5}
	var content []any
	stop := "end_turn"
	if call != nil {
		content = []any{map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", len(results)), "name": call.Tool, "input": call.Args}}
		stop = "tool_use"
	} else {
		content = []any{map[string]any{"type": "text", "text": ClosingText}}
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, mustJSON(map[string]any{"id": id, "type": "message", "role": "assistant", "model": req.Model,
			"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage}))
		return
	}
	ev := [][2]string{{"message_start", mustJSON(map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": req.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage}})}}
	if call != nil {
		ev = append(ev,
			[2]string{"content_block_start", mustJSON(map[string]any{"type": "content_block_start", "index": 0,
				"content_block": map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", len(results)), "name": call.Tool, "input": map[string]any{}}})},
			[2]string{"content_block_delta", mustJSON(map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": mustJSON(call.Args)}})})
	} else {
		ev = append(ev,
			[2]string{"content_block_start", mustJSON(map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})},
			[2]string{"content_block_delta", mustJSON(map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": ClosingText}})})
	}
	ev = append(ev,
		[2]string{"content_block_stop", `{"type":"content_block_stop","index":0}`},
		[2]string{"message_delta", mustJSON(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 5}})},
		[2]string{"message_stop", `{"type":"message_stop"}`})
	sse(w, ev)
}

// zeroOf is the empty value a JSON schema describes: its properties with
// zero values (an object's own recursively), so that a client that asked
// for JSON gets JSON it can read.
func zeroOf(schema map[string]any) any {
	typ, _ := schema["type"].(string)
	switch strings.ToLower(typ) {
	case "string":
		return ""
	case "number", "integer":
		return 0
	case "boolean":
		return false
	case "array":
		return []any{}
	}
	out := map[string]any{}
	props, _ := schema["properties"].(map[string]any)
	for k, v := range props {
		if sub, ok := v.(map[string]any); ok {
			out[k] = zeroOf(sub)
		}
	}
	return out
}

func excerpt(s, mark string) string {
	i := strings.Index(s, mark)
	if i < 0 {
		return ""
	}
	return s[max(0, i-300):min(len(s), i+300)]
}

// Gemini speaks the Gemini API (models/*:generateContent and
// :streamGenerateContent with alt=sse).
func Gemini(m *Model, w http.ResponseWriter, r *http.Request, body []byte) {
	stream := strings.Contains(r.URL.Path, ":streamGenerateContent")
	if !stream && !strings.Contains(r.URL.Path, ":generateContent") {
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.URL.Path, ":countTokens") {
			io.WriteString(w, `{"totalTokens": 10}`)
			return
		}
		io.WriteString(w, `{}`)
		return
	}
	var req struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				FunctionResponse *struct {
					Name     string          `json:"name"`
					Response json.RawMessage `json:"response"`
				} `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
		GenerationConfig struct {
			ResponseMimeType   string         `json:"responseMimeType"`
			ResponseJSONSchema map[string]any `json:"responseJsonSchema"`
			ResponseSchema     map[string]any `json:"responseSchema"`
		} `json:"generationConfig"`
		Tools []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(body, &req)
	offered := false
	var names []string
	for _, tl := range req.Tools {
		for _, f := range tl.FunctionDeclarations {
			names = append(names, f.Name)
			if strings.Contains(f.Name, m.Mark) {
				offered = true
			}
		}
	}
	m.note("tools offered: %v", names)
	if strings.Contains(string(body), `"wait_for_previous"`) {
		m.note("the tool declarations carry wait_for_previous")
	}
	var results []string
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if p.FunctionResponse != nil {
				results = append(results, textOf(p.FunctionResponse.Response))
			}
		}
	}
	call := m.turn(offered, results)
	part := map[string]any{"text": ClosingText}
	if call != nil {
		part = map[string]any{"functionCall": map[string]any{"name": call.Tool, "args": call.Args}}
	} else if gc := req.GenerationConfig; gc.ResponseMimeType == "application/json" {
		// A side request that wants JSON (Gemini CLI's checks on its own
		// loop): the least answer its schema takes.
		schema := gc.ResponseJSONSchema
		if schema == nil {
			schema = gc.ResponseSchema
		}
		part = map[string]any{"text": mustJSON(zeroOf(schema))}
	}
	resp := mustJSON(map[string]any{
		"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]int{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
		"modelVersion":  "gemini-2.5-flash",
	})
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, resp)
		return
	}
	sse(w, [][2]string{{"", resp}})
}

// OpenAIChat speaks OpenAI's Chat Completions API (POST
// …/chat/completions, streamed or not), which Qwen Code and opencode use
// for OpenAI-compatible providers.
func OpenAIChat(m *Model, w http.ResponseWriter, r *http.Request, body []byte) {
	if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/models") {
			io.WriteString(w, `{"object":"list","data":[{"id":"fake-model","object":"model","owned_by":"sluice-test"}]}`)
			return
		}
		io.WriteString(w, `{}`)
		return
	}
	var req struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(body, &req)
	offered := false
	var names []string
	for _, tl := range req.Tools {
		names = append(names, tl.Function.Name)
		if strings.Contains(tl.Function.Name, m.Mark) {
			offered = true
		}
	}
	m.note("tools offered: %v", names)
	var results []string
	for _, msg := range req.Messages {
		if msg.Role == "tool" {
			results = append(results, textOf(msg.Content))
		}
	}
	call := m.turn(offered, results)
	id := fmt.Sprintf("chatcmpl-%d", len(results))
	usage := map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": ClosingText}
		finish := "stop"
		if call != nil {
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": fmt.Sprintf("call_%d", len(results)), "type": "function",
				"function": map[string]any{"name": call.Tool, "arguments": mustJSON(call.Args)}}}}
			finish = "tool_calls"
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, mustJSON(map[string]any{"id": id, "object": "chat.completion", "created": 1, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage}))
		return
	}
	chunk := func(delta map[string]any, finish any, withUsage bool) [2]string {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if withUsage {
			c["usage"] = usage
		}
		return [2]string{"", mustJSON(c)}
	}
	var ev [][2]string
	if call != nil {
		ev = append(ev,
			chunk(map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"index": 0,
				"id": fmt.Sprintf("call_%d", len(results)), "type": "function",
				"function": map[string]any{"name": call.Tool, "arguments": mustJSON(call.Args)}}}}, nil, false),
			chunk(map[string]any{}, "tool_calls", true))
	} else {
		ev = append(ev, chunk(map[string]any{"role": "assistant", "content": ClosingText}, nil, false), chunk(map[string]any{}, "stop", true))
	}
	ev = append(ev, [2]string{"", "[DONE]"})
	sse(w, ev)
}

// OpenAIResponses speaks OpenAI's Responses API (POST …/responses,
// streamed), which Codex uses.
func OpenAIResponses(m *Model, w http.ResponseWriter, r *http.Request, body []byte) {
	if !strings.HasSuffix(r.URL.Path, "/responses") {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/models") {
			io.WriteString(w, `{"object":"list","data":[{"id":"fake-model","object":"model","owned_by":"sluice-test"}],"models":[]}`)
			return
		}
		io.WriteString(w, `{}`)
		return
	}
	var req struct {
		Model string            `json:"model"`
		Input []json.RawMessage `json:"input"`
		Tools []json.RawMessage `json:"tools"`
	}
	_ = json.Unmarshal(body, &req)
	offered := false
	var names []string
	for _, raw := range req.Tools {
		var tl struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		_ = json.Unmarshal(raw, &tl)
		names = append(names, tl.Name)
		for _, sub := range tl.Tools {
			names = append(names, tl.Name+"/"+sub.Name)
		}
		if strings.Contains(string(raw), m.Mark) {
			offered = true
		}
	}
	m.note("tools offered: %v", names)
	var results []string
	for _, raw := range req.Input {
		var it struct {
			Type   string          `json:"type"`
			Output json.RawMessage `json:"output"`
		}
		if json.Unmarshal(raw, &it) == nil && it.Type == "function_call_output" {
			results = append(results, textOf(it.Output))
		}
	}
	call := m.turn(offered, results)
	id := fmt.Sprintf("resp_%d", len(results))
	var item map[string]any
	if call != nil {
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", len(results)), "call_id": fmt.Sprintf("call_%d", len(results)),
			"name": call.Tool, "arguments": mustJSON(call.Args), "status": "completed"}
		// A tool offered inside a namespace ({"type": "namespace", "name":
		// "mcp__sluice", "tools": […]}) is called by its short name with
		// the namespace beside it.
		if ns, short, ok := strings.Cut(call.Tool, "/"); ok {
			item["namespace"], item["name"] = ns, short
		}
	} else {
		item = map[string]any{"type": "message", "id": fmt.Sprintf("msg_%d", len(results)), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": ClosingText, "annotations": []any{}}}}
	}
	usage := map[string]any{"input_tokens": 10, "input_tokens_details": map[string]int{"cached_tokens": 0},
		"output_tokens": 5, "output_tokens_details": map[string]int{"reasoning_tokens": 0}, "total_tokens": 15}
	ev := [][2]string{
		{"response.created", mustJSON(map[string]any{"type": "response.created", "response": map[string]any{"id": id, "object": "response", "status": "in_progress", "model": req.Model, "output": []any{}}})},
		{"response.output_item.added", mustJSON(map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})},
		{"response.output_item.done", mustJSON(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})},
		{"response.completed", mustJSON(map[string]any{"type": "response.completed", "response": map[string]any{"id": id, "object": "response", "status": "completed", "model": req.Model, "output": []any{item}, "usage": usage}})},
	}
	sse(w, ev)
}
