package agenttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Call is one scripted model turn of the fake Responses API: a function call, or text.
type Call struct {
	Name string         // function name (exec_command, request_user_input)
	Args map[string]any // its arguments
	Text string         // or an assistant message
}

// Exec is Codex's exec_command running cmd. It waits up to Codex's longest
// yield (30 s) for the command to end: by default Codex answers the model
// after 10 s with the command still running, and ends it with the session, so
// on a loaded machine a quick command could be cut off before it wrote a byte.
func Exec(cmd string) Call {
	return Call{Name: "exec_command", Args: map[string]any{"cmd": cmd, "yield_time_ms": 30000}}
}

// Responses is a scripted OpenAI Responses API streaming server-sent events, as
// Codex uses it. Turn n (after n function calls in the input) plays script[n].
type Responses struct {
	t      testing.TB
	srv    *httptest.Server
	mu     sync.Mutex
	script []Call
	inputs [][]any  // every request's input items
	keys   []string // the bearer token of each request
}

// NewResponses serves script until the test ends.
func NewResponses(t testing.TB, script ...Call) *Responses {
	f := &Responses{t: t, script: script}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *Responses) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/responses" {
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Input []any `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		f.t.Errorf("fake Responses API: %v", err)
		return
	}
	turn := 0
	for _, it := range req.Input {
		if m, _ := it.(map[string]any); m["type"] == "function_call" {
			turn++
		}
	}
	f.mu.Lock()
	f.inputs = append(f.inputs, req.Input)
	f.keys = append(f.keys, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	c := Call{Text: "(the script has no more turns)"}
	if turn < len(f.script) {
		c = f.script[turn]
	}
	f.mu.Unlock()
	var item map[string]any
	if c.Name != "" {
		args, _ := json.Marshal(c.Args)
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", turn), "call_id": fmt.Sprintf("call_%d", turn), "name": c.Name, "arguments": string(args), "status": "completed"}
	} else {
		item = map[string]any{"type": "message", "id": fmt.Sprintf("msg_%d", turn), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": c.Text, "annotations": []any{}}}}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(v map[string]any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", v["type"], b)
	}
	resp := map[string]any{"id": fmt.Sprintf("resp_%d", turn), "object": "response", "status": "in_progress", "model": "gpt-fake", "output": []any{}}
	event(map[string]any{"type": "response.created", "response": resp})
	event(map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
	event(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	resp["status"], resp["output"] = "completed", []any{item}
	resp["usage"] = map[string]any{"input_tokens": 100, "output_tokens": 20, "total_tokens": 120,
		"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}
	event(map[string]any{"type": "response.completed", "response": resp})
}

// Keys are the bearer tokens the requests came with, in order. Each request is
// answered with 100 tokens in and 20 out.
func (f *Responses) Keys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.keys)
}

// Replay starts a new script for the next conversation.
func (f *Responses) Replay(script ...Call) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script, f.inputs = script, nil
}

// Output returns what the model was told of its n-th function call.
func (f *Responses) Output(n int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.inputs) - 1; i >= 0; i-- {
		var outs []string
		for _, it := range f.inputs[i] {
			if m, _ := it.(map[string]any); m["type"] == "function_call_output" {
				b, _ := json.Marshal(m["output"])
				outs = append(outs, string(b))
			}
		}
		if n < len(outs) {
			return outs[n]
		}
	}
	return ""
}

// LastInput is the input of the latest request, as JSON.
func (f *Responses) LastInput() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.inputs) == 0 {
		return ""
	}
	b, _ := json.Marshal(f.inputs[len(f.inputs)-1])
	return string(b)
}

// URL is the API's base URL without /v1 (a provider's base_url adds it).
func (f *Responses) URL() string { return f.srv.URL }

// Codex returns the real `codex` CLI.
func Codex(t testing.TB) string {
	return NPMAgent(t, "@openai/codex", CodexVersion, "codex")
}

// CodexProvider is the -c arguments that point Codex at f: its model provider, with the
// key in FAKE_MODEL_KEY.
func CodexProvider(f *Responses) []string {
	provider := fmt.Sprintf(`model_providers.fake={ name = "fake", base_url = "%s/v1", env_key = "FAKE_MODEL_KEY", wire_api = "responses" }`, f.URL())
	return []string{"-c", `model_provider="fake"`, "-c", `model="gpt-fake"`, "-c", provider}
}
