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
	"time"
)

// ChatCompletions is a scripted OpenAI-compatible Chat Completions API, streaming
// server-sent events or answering whole, as the CLIs that take any OpenAI-compatible
// provider use it (Qwen Code, OpenCode). The conversation's turn n (after n tool
// results in its messages) plays script[n]; requests that offer no tools (a title, a
// check of who speaks next) get a short text that lets the conversation go on.
type ChatCompletions struct {
	t      testing.TB
	srv    *httptest.Server
	mu     sync.Mutex
	script []Call
	last   []map[string]any // the latest main request's messages
	served int
	keys   []string // the bearer token of each completion call
}

// NewChatCompletions serves script until the test ends.
func NewChatCompletions(t testing.TB, script ...Call) *ChatCompletions {
	f := &ChatCompletions{t: t, script: script}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// Keys are the bearer tokens the completion calls came with, in order. Each call is
// answered with 100 tokens in and 20 out.
func (f *ChatCompletions) Keys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.keys)
}

// URL is the API's base URL, with /v1.
func (f *ChatCompletions) URL() string { return f.srv.URL + "/v1" }

// Replay starts a new script for the next conversation.
func (f *ChatCompletions) Replay(script ...Call) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script, f.last = script, nil
}

func (f *ChatCompletions) serve(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		if strings.HasSuffix(r.URL.Path, "/models") {
			writeJSONBody(w, map[string]any{"object": "list", "data": []any{map[string]any{"id": "fake-model", "object": "model", "owned_by": "agentmux"}}})
			return
		}
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.keys = append(f.keys, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	f.mu.Unlock()
	var req struct {
		Messages []map[string]any `json:"messages"`
		Tools    []any            `json:"tools"`
		Stream   bool             `json:"stream"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		f.t.Errorf("fake Chat Completions API: %v", err)
		return
	}
	c := Call{Text: `{"next_speaker":"user","reasoning":"the script decides"}`}
	f.mu.Lock()
	f.served++
	id := f.served
	if len(req.Tools) > 0 {
		turn := 0
		for _, m := range req.Messages {
			if m["role"] == "tool" {
				turn++
			}
		}
		f.last = req.Messages
		c = Call{Text: "(the script has no more turns)"}
		if turn < len(f.script) {
			c = f.script[turn]
		}
	}
	f.mu.Unlock()
	message := map[string]any{"role": "assistant", "content": c.Text}
	finish := "stop"
	if c.Name != "" {
		args, _ := json.Marshal(c.Args)
		message = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"index": 0, "id": fmt.Sprintf("call_%d", id), "type": "function", "function": map[string]any{"name": c.Name, "arguments": string(args)}}}}
		finish = "tool_calls"
	}
	usage := map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
	base := map[string]any{"id": fmt.Sprintf("chatcmpl-%d", id), "created": time.Now().Unix(), "model": "fake-model"}
	if !req.Stream {
		out := map[string]any{"object": "chat.completion", "choices": []any{map[string]any{"index": 0, "message": message, "finish_reason": finish}}, "usage": usage}
		for k, v := range base {
			out[k] = v
		}
		writeJSONBody(w, out)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(choice map[string]any, extra map[string]any) {
		out := map[string]any{"object": "chat.completion.chunk", "choices": []any{choice}}
		for k, v := range base {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		b, _ := json.Marshal(out)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	chunk(map[string]any{"index": 0, "delta": message, "finish_reason": nil}, nil)
	chunk(map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}, map[string]any{"usage": usage})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// Output returns what the model was told of its n-th tool call (the n-th tool message)
// in the latest request of the conversation.
func (f *ChatCompletions) Output(n int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := 0
	for _, m := range f.last {
		if m["role"] == "tool" {
			if i == n {
				b, _ := json.Marshal(m["content"])
				return string(b)
			}
			i++
		}
	}
	return ""
}

// ChatAnswer serves a Chat Completions API, until the test ends, that answers every
// request whole with content, as model fake-1, having read 10 tokens and written 5;
// it returns the server's URL (a connection's base_url adds /v1).
func ChatAnswer(t testing.TB, content string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		writeJSONBody(w, map[string]any{"id": "c1", "object": "chat.completion", "created": 1, "model": "fake-1",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
