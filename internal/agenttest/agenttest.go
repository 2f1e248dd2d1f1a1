package agenttest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The agent CLIs the tests run, from npm (keep in step with .ci/run).
const (
	ClaudeVersion   = "2.1.197" // @anthropic-ai/claude-code
	ACPVersion      = "0.100.0" // @agentclientprotocol/claude-agent-acp
	CodexVersion    = "0.169.0" // @openai/codex
	QwenVersion     = "0.24.4"  // @qwen-code/qwen-code
	OpenCodeVersion = "1.18.33" // opencode-ai
	CopilotVersion  = "1.0.102" // @github/copilot
)

// Claude returns the real `claude` CLI.
func Claude(t testing.TB) string {
	return NPMAgent(t, "@anthropic-ai/claude-code", ClaudeVersion, "claude")
}

// NPMAgent returns bin of the pinned npm package, installing it into .ci/agents (never
// globally) when it is missing or another version.
func NPMAgent(t testing.TB, pkg, version, bin string) string {
	t.Helper()
	NPMPackage(t, pkg, version)
	path := filepath.Join(npmPrefix(), "node_modules", ".bin", bin)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("npm installed %s@%s but there is no %s: %v", pkg, version, path, err)
	}
	return path
}

// NPMPackage returns the folder of the pinned npm package, installing it into
// .ci/agents (never globally) when it is missing or another version.
func NPMPackage(t testing.TB, pkg, version string) string {
	t.Helper()
	prefix := npmPrefix()
	dir := filepath.Join(prefix, "node_modules", pkg)
	installMu.Lock()
	defer installMu.Unlock()
	if b, err := os.ReadFile(filepath.Join(dir, "package.json")); err == nil && strings.Contains(string(b), `"version": "`+version+`"`) {
		return dir
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "install", "--prefix", prefix, "--no-audit", "--no-fund", pkg+"@"+version)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("install %s@%s from npm into %s: %v\n%s", pkg, version, prefix, err, out)
	}
	return dir
}

// npmPrefix is the folder the tests' npm packages are installed in: .ci/agents.
func npmPrefix() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", ".ci", "agents")
}

var installMu sync.Mutex

// Block is one content block of a scripted model turn.
type Block struct {
	Text  string
	Tool  string         // tool_use name
	Input map[string]any // tool_use input
}

// Anthropic is a scripted Anthropic Messages API streaming server-sent events, as
// the CLI uses it. The conversation's turn n (its n-th assistant message) plays
// script[n]; requests without tools (the CLI's side calls) get a short text.
type Anthropic struct {
	t      testing.TB
	srv    *httptest.Server
	script [][]Block

	mu       sync.Mutex
	gates    map[int]string   // turn → a text the conversation must hold before it plays
	requests []map[string]any // the main conversation's requests
	served   int              // responses so far: each message and tool call has an id of its own
	keys     []string         // the credential of each message call: its x-api-key, or its bearer token
	limited  int              // message calls still to be answered 429
	wait     string           // their retry-after
}

// NewAnthropic serves script until the test ends.
func NewAnthropic(t testing.TB, script ...[]Block) *Anthropic {
	f := &Anthropic{t: t, script: script}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *Anthropic) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		w.WriteHeader(http.StatusOK) // the CLI's connectivity checks
		return
	}
	body, _ := io.ReadAll(r.Body)
	key := r.Header.Get("X-Api-Key")
	if key == "" {
		key = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	f.mu.Lock()
	f.keys = append(f.keys, key)
	limited := f.limited > 0
	if limited {
		f.limited--
	}
	f.mu.Unlock()
	if limited {
		w.Header().Set("Retry-After", f.wait)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`)
		return
	}
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		f.t.Errorf("fake Anthropic API: %v", err)
		return
	}
	blocks := []Block{{Text: "ok"}}
	if _, main := req["tools"]; main {
		turn := 0
		msgs, _ := req["messages"].([]any)
		for _, m := range msgs {
			if mm, _ := m.(map[string]any); mm["role"] == "assistant" && !held(mm) {
				turn++
			}
		}
		f.mu.Lock()
		f.requests = append(f.requests, req)
		blocks = []Block{{Text: "(the script has no more turns)"}}
		if turn < len(f.script) {
			blocks = f.script[turn]
		}
		if gate, ok := f.gates[turn]; ok && !bytes.Contains(body, []byte(gate)) {
			blocks = []Block{{Text: heldText}}
		}
		f.mu.Unlock()
	}
	f.mu.Lock()
	f.served++
	n := f.served
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(name string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": fmt.Sprintf("msg_fake_%d", n), "type": "message", "role": "assistant",
		"model": req["model"], "content": []any{}, "stop_reason": nil, "usage": map[string]any{"input_tokens": 100, "output_tokens": 1}}})
	stop := "end_turn"
	for i, b := range blocks {
		if b.Tool != "" {
			stop = "tool_use"
			input, _ := json.Marshal(b.Input)
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d_%d", n, i), "name": b.Tool, "input": map[string]any{}}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
		} else {
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": b.Text}})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop}, "usage": map[string]any{"output_tokens": 20}})
	event("message_stop", map[string]any{"type": "message_stop"})
}

// heldText is the reply to a turn whose gate is shut; such a reply is not counted as a
// turn of the script.
const heldText = "(the script holds this turn)"

func held(message map[string]any) bool {
	blocks, _ := message["content"].([]any)
	for _, b := range blocks {
		if bb, _ := b.(map[string]any); bb["type"] == "text" && bb["text"] == heldText {
			return true
		}
	}
	return message["content"] == heldText
}

// Gate plays script turn n only once the conversation holds text; until then that turn
// is answered with a plain text that ends it and does not count. A request the CLI
// makes in a turn it was told to cancel then cannot take a turn meant for the next one.
func (f *Anthropic) Gate(n int, text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gates == nil {
		f.gates = map[int]string{}
	}
	f.gates[n] = text
}

// Limit answers the next n message calls as a provider at its rate limit does: 429,
// rate_limit_error, with retry-after (seconds).
func (f *Anthropic) Limit(n int, retryAfter string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.limited, f.wait = n, retryAfter
}

// Replay starts a new script for the next conversation.
func (f *Anthropic) Replay(script ...[]Block) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script, f.requests, f.gates = script, nil, nil
}

// ToolResult returns what the model was told of its n-th tool call (the tool_result the
// CLI sent back), and whether it was an error, in the latest request that carries tool
// results: each request holds the whole conversation so far.
func (f *Anthropic) ToolResult(n int) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.requests) - 1; i >= 0; i-- {
		msgs, _ := f.requests[i]["messages"].([]any)
		var results []map[string]any
		for _, m := range msgs {
			mm, _ := m.(map[string]any)
			blocks, _ := mm["content"].([]any)
			for _, b := range blocks {
				if bb, _ := b.(map[string]any); bb["type"] == "tool_result" {
					results = append(results, bb)
				}
			}
		}
		if n < len(results) {
			content, _ := json.Marshal(results[n]["content"])
			isErr, _ := results[n]["is_error"].(bool)
			return string(content), isErr
		}
	}
	return "", false
}

// Keys are the credentials the message calls came with, in order: each one's
// x-api-key, or its bearer token. Each call is answered with 100 tokens in and 20 out.
func (f *Anthropic) Keys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.keys)
}

// URL is where the API is served: ANTHROPIC_BASE_URL.
func (f *Anthropic) URL() string { return f.srv.URL }

// LastMessages is the messages of the main conversation's latest request, as JSON.
func (f *Anthropic) LastMessages() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) == 0 {
		return nil
	}
	b, _ := json.Marshal(f.requests[len(f.requests)-1]["messages"])
	return b
}
