package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// buildRuntime builds the real runtime binary: the demo starts itself as `agentmux sim`.
func buildRuntime(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "runtime")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func runDemo(t *testing.T, bin string, env []string, args ...string) (string, string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"demo"}, args...)...)
	cmd.Env = env
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("demo: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		}
	case <-time.After(90 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("demo did not finish in 90s\nstderr:\n%s", stderr.String())
	}
	return stdout.String(), stderr.String()
}

// withoutKeys is the environment minus model API keys, so the demo is rule-only.
func withoutKeys() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, "ANTHROPIC_") && !strings.HasPrefix(kv, "AGENTMUX_") {
			env = append(env, kv)
		}
	}
	return env
}

func TestDemo(t *testing.T) {
	t.Parallel()
	out, _ := runDemo(t, buildRuntime(t), withoutKeys())
	for _, want := range []string{"sessions   ok 199   err 1", "timed_out         1", "cancelled         1", "invalid           8", "rule:security", "rule:qa", "static:default", "question round trip",
		"staged on purpose", "err 1: the 43rd agent exits with status 3", "timed_out 1: ", "invalid 8: ", "cancelled 1: ", "try next:"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

// schemaModel is a Chat Completions server whose model answers every request with the
// first value its response schema allows: approve, true, the first option, "ok".
func schemaModel(t *testing.T, calls *atomic.Int64) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		var req struct {
			ResponseFormat struct {
				JSONSchema struct {
					Schema struct {
						Properties map[string]struct {
							Type  string `json:"type"`
							Enum  []any  `json:"enum"`
							Items *struct {
								Enum []any `json:"enum"`
							} `json:"items"`
						} `json:"properties"`
					} `json:"schema"`
				} `json:"json_schema"`
			} `json:"response_format"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Errorf("request %s: %v", body, err)
		}
		reply := map[string]any{"reason": "first allowed value", "risk_level": "low"}
		for key, p := range req.ResponseFormat.JSONSchema.Schema.Properties {
			if key != "answer" && key != "decision" {
				continue
			}
			switch {
			case len(p.Enum) > 0:
				reply[key] = p.Enum[0]
			case p.Type == "boolean":
				reply[key] = true
			case p.Type == "array" && p.Items != nil && len(p.Items.Enum) > 0:
				reply[key] = []any{p.Items.Enum[0]}
			default:
				reply[key] = "ok"
			}
		}
		content, _ := json.Marshal(reply)
		q, _ := json.Marshal(string(content))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c","object":"chat.completion","created":1,"model":"demo-model","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, q)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestDemoUsesAnLLMWhenAKeyIsSet(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	srv := schemaModel(t, &calls)
	env := append(withoutKeys(), "OPENAI_API_KEY=sk-demo", "OPENAI_BASE_URL="+srv.URL+"/v1", "AGENTMUX_DEMO_MODEL=demo-model")
	out, errOut := runDemo(t, buildRuntime(t), env, "--sessions", "40")
	if !strings.Contains(errOut, "default (llm demo-model, falling back to static)") {
		t.Errorf("banner:\n%s", errOut)
	}
	if !strings.Contains(out, "llm:default/demo-model") || calls.Load() == 0 {
		t.Fatalf("no decision by the model (%d calls):\n%s", calls.Load(), out)
	}
}
