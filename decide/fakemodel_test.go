package decide

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/agentmux/agentmux/config"
)

// turn is one scripted answer of the fake model API.
type turn struct {
	status int           // 0: 200
	text   string        // the model's reply: content (OpenAI) or the decide tool's input (Anthropic)
	asText bool          // Anthropic: reply with a text block instead of the tool call
	hang   bool          // never answer; return when the client gives up
	delay  time.Duration // answer after this long
}

// fakeModel is an OpenAI Chat Completions or Anthropic Messages server that plays a
// script of turns and records every request body, for the real SDK clients to talk to.
type fakeModel struct {
	t        *testing.T
	srv      *httptest.Server
	provider string

	mu       sync.Mutex
	script   []turn
	requests []map[string]any
}

func newFakeModel(t *testing.T, provider string, script ...turn) *fakeModel {
	f := &fakeModel{t: t, provider: provider, script: script}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// connection is a [connections.X] pointing at the fake.
func (f *fakeModel) connection() *config.Connection {
	c := &config.Connection{Name: "fake", Provider: f.provider, APIKeyEnv: "FAKE_MODEL_KEY", DefaultModel: "fake-model-1"}
	if f.provider == config.ProviderAnthropic {
		c.BaseURL = f.srv.URL
	} else {
		c.BaseURL = f.srv.URL + "/v1"
	}
	return c
}

func (f *fakeModel) serve(w http.ResponseWriter, r *http.Request) {
	wantPath := "/v1/chat/completions"
	if f.provider == config.ProviderAnthropic {
		wantPath = "/v1/messages"
	}
	if r.Method != http.MethodPost || r.URL.Path != wantPath {
		f.t.Errorf("fake %s API: unexpected %s %s", f.provider, r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	}
	if got := r.Header.Get("Authorization") + r.Header.Get("X-Api-Key"); got != "Bearer sk-test" && got != "sk-test" {
		f.t.Errorf("fake %s API: credentials %q", f.provider, got)
	}
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		f.t.Errorf("fake %s API: body %s: %v", f.provider, body, err)
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	var tn turn
	if len(f.script) > 0 {
		tn, f.script = f.script[0], f.script[1:]
	} else {
		tn = turn{status: http.StatusInternalServerError}
	}
	f.mu.Unlock()

	if tn.hang {
		<-r.Context().Done()
		return
	}
	if tn.delay > 0 {
		select {
		case <-time.After(tn.delay):
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if tn.status != 0 && tn.status != http.StatusOK {
		w.WriteHeader(tn.status)
		fmt.Fprintf(w, `{"error":{"type":"api_error","message":"scripted %d"}}`, tn.status)
		return
	}
	if f.provider == config.ProviderAnthropic {
		block := fmt.Sprintf(`{"type":"tool_use","id":"toolu_1","name":"decide","input":%s}`, tn.text)
		if tn.asText {
			q, _ := json.Marshal(tn.text)
			block = fmt.Sprintf(`{"type":"text","text":%s}`, q)
		}
		fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":"fake-model-1","content":[%s],"stop_reason":"tool_use","usage":{"input_tokens":120,"output_tokens":30}}`, block)
		return
	}
	q, _ := json.Marshal(tn.text)
	fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"fake-model-1","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150}}`, q)
}

// request returns the i-th request body the fake received.
func (f *fakeModel) request(i int) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.requests) {
		f.t.Fatalf("the fake received %d requests; want at least %d", len(f.requests), i+1)
	}
	return f.requests[i]
}

func (f *fakeModel) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}
