package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/metrics"
)

// The keys of the node's connections, in its environment only.
const (
	anthropicKey = "sk-ant-node-key"
	openAIKey    = "sk-openai-node-key"
	geminiKey    = "AIza-node-key"
)

// provider is a scripted model API that records what reached it: what the gateway
// sent on, headers and all.
type provider struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []*http.Request
	// bodies are the requests' bodies, as sent on.
	bodies []map[string]any
	// status, when set, is every answer's (with retry-after 7).
	status int
}

func (p *provider) last(t *testing.T) (*http.Request, map[string]any) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.got) == 0 {
		t.Fatal("no call reached the provider")
	}
	return p.got[len(p.got)-1], p.bodies[len(p.bodies)-1]
}

func (p *provider) calls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.got)
}

// newProvider serves Anthropic's Messages API and OpenAI's Chat Completions and
// Responses, streamed (server-sent events, as the providers stream) or not, with the
// usage each reports.
func newProvider(t *testing.T) *provider {
	p := &provider{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		data, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(data, &body)
		p.mu.Lock()
		p.got, p.bodies = append(p.got, r), append(p.bodies, body)
		status := p.status
		p.mu.Unlock()
		if status != 0 {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)
			return
		}
		stream, _ := body["stream"].(bool)
		event := func(name string, v string) {
			if name != "" {
				fmt.Fprintf(w, "event: %s\n", name)
			}
			fmt.Fprintf(w, "data: %s\n\n", v)
			w.(http.Flusher).Flush()
		}
		switch r.URL.Path {
		case "/v1/messages":
			if !stream {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":12,"output_tokens":3,"cache_read_input_tokens":40,"cache_creation_input_tokens":5}}`)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			event("message_start", `{"type":"message_start","message":{"id":"msg_2","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"usage":{"input_tokens":100,"output_tokens":1,"cache_read_input_tokens":50,"cache_creation_input_tokens":10}}}`)
			event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
			event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"the word \"usage\" in a text"}}`)
			event("content_block_stop", `{"type":"content_block_stop","index":0}`)
			event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":20}}`)
			event("message_stop", `{"type":"message_stop"}`)
		case "/v1/chat/completions":
			if !stream {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-5","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":30,"completion_tokens":7,"total_tokens":37,"prompt_tokens_details":{"cached_tokens":10}}}`)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			event("", `{"id":"c2","object":"chat.completion.chunk","created":1,"model":"gpt-5","choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]}`)
			event("", `{"id":"c2","object":"chat.completion.chunk","created":1,"model":"gpt-5","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
			if opts, _ := body["stream_options"].(map[string]any); opts["include_usage"] == true {
				event("", `{"id":"c2","object":"chat.completion.chunk","created":1,"model":"gpt-5","choices":[],"usage":{"prompt_tokens":300,"completion_tokens":70,"total_tokens":370,"prompt_tokens_details":{"cached_tokens":100}}}`)
			}
			event("", `[DONE]`)
		case "/v1/responses":
			w.Header().Set("Content-Type", "text/event-stream")
			resp := func(status, usage string) string {
				return `{"id":"resp_1","object":"response","created_at":1,"status":"` + status + `","model":"gpt-5-codex","output":[],"usage":` + usage + `}`
			}
			event("response.created", `{"type":"response.created","sequence_number":0,"response":`+resp("in_progress", "null")+`}`)
			event("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":1,"item_id":"m1","output_index":0,"content_index":0,"delta":"ok"}`)
			event("response.completed", `{"type":"response.completed","sequence_number":2,"response":`+resp("completed", `{"input_tokens":1000,"input_tokens_details":{"cached_tokens":600},"output_tokens":90,"output_tokens_details":{"reasoning_tokens":40},"total_tokens":1090}`)+`}`)
		case "/v1beta/models/gemini-2.5-pro:generateContent":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":50,"candidatesTokenCount":5,"totalTokenCount":55},"modelVersion":"gemini-2.5-pro"}`)
		case "/v1beta/models/gemini-2.5-pro:streamGenerateContent":
			chunk := func(finish, usage string) string {
				return `{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]}` + finish + `,"index":0}],"usageMetadata":` + usage + `,"modelVersion":"gemini-2.5-pro-001"}`
			}
			first, last := chunk("", `{"promptTokenCount":500,"totalTokenCount":500}`), chunk(`,"finishReason":"STOP"`, `{"promptTokenCount":500,"candidatesTokenCount":30,"thoughtsTokenCount":12,"cachedContentTokenCount":200,"totalTokenCount":542}`)
			if r.URL.Query().Get("alt") != "sse" { // one JSON array, streamed
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, "["+first+",\r\n"+last+"]")
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			event("", first)
			event("", last)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// fixture is a gateway to two connections of one scripted provider, and what the
// passes were told.
type fixture struct {
	g       *Gateway
	http    *http.Client // the agents', whose connections close with the test
	p       *provider
	metrics *metrics.Set
	mu      sync.Mutex
	calls   []Call
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{p: newProvider(t), metrics: metrics.New(), http: &http.Client{Transport: &http.Transport{}}}
	t.Cleanup(f.http.CloseIdleConnections)
	env := map[string]string{"ANTHROPIC_KEY": anthropicKey, "OPENAI_KEY": openAIKey, "GEMINI_KEY": geminiKey}
	var err error
	f.g, err = New(Config{
		Connections: map[string]*config.Connection{
			"claude": {Name: "claude", Provider: config.ProviderAnthropic, APIKeyEnv: "ANTHROPIC_KEY", BaseURL: f.p.srv.URL, DefaultModel: "claude-sonnet-4-5"},
			"oa":     {Name: "oa", Provider: config.ProviderOpenAI, APIKeyEnv: "OPENAI_KEY", BaseURL: f.p.srv.URL + "/v1", DefaultModel: "gpt-5"},
			"gem":    {Name: "gem", Provider: config.ProviderGemini, APIKeyEnv: "GEMINI_KEY", BaseURL: f.p.srv.URL, DefaultModel: "gemini-2.5-pro"},
		},
		Getenv: func(k string) string { return env[k] }, MaxBody: 1 << 20, Metrics: f.metrics, Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.g.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.g.Close(context.Background()) })
	return f
}

// pass issues a pass to connection, bound to session.
func (f *fixture) pass(t *testing.T, connection, session string) *Pass {
	p, err := f.g.Issue(connection, func(c Call) {
		f.mu.Lock()
		f.calls = append(f.calls, c)
		f.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	p.Bind(session, nil)
	return p
}

// call is the n-th call reported (from 1), once it is: a call is reported as its
// answer ends, which the agent may have read already.
func (f *fixture) call(t *testing.T, n int) Call {
	t.Helper()
	proctest.Eventually(t, fmt.Sprintf("call %d reported", n), func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.calls) >= n
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[n-1]
}

func (f *fixture) anthropic(p *Pass) anthropic.Client {
	return anthropic.NewClient(aoption.WithBaseURL(f.g.URL()+"/claude"), aoption.WithAPIKey(p.Token()), aoption.WithMaxRetries(0), aoption.WithHTTPClient(f.http))
}

func (f *fixture) openAI(p *Pass) openai.Client {
	return openai.NewClient(ooption.WithBaseURL(f.g.URL()+"/oa"), ooption.WithAPIKey(p.Token()), ooption.WithMaxRetries(0), ooption.WithHTTPClient(f.http))
}

var hello = anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 64,
	Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))}}

// TestAnthropicThroughTheGateway: the official SDK, with the token of its pass, calls
// the Messages API streamed and not; the provider sees the node's key, never the
// token, with Anthropic's version and beta headers; the session is told the tokens the
// provider counted, cache included.
func TestAnthropicThroughTheGateway(t *testing.T) {
	f := newFixture(t)
	p := f.pass(t, "claude", "s-1")
	client := f.anthropic(p)
	ctx := context.Background()

	stream := client.Messages.NewStreaming(ctx, hello, aoption.WithHeader("anthropic-beta", "interleaved-thinking-2025-05-14"))
	var text strings.Builder
	for stream.Next() {
		if d := stream.Current().AsAny(); d != nil {
			if cbd, ok := d.(anthropic.ContentBlockDeltaEvent); ok {
				text.WriteString(cbd.Delta.Text)
			}
		}
	}
	if err := stream.Err(); err != nil || !strings.Contains(text.String(), "usage") {
		t.Fatalf("the stream: %v, text %q", err, text.String())
	}
	r, _ := f.p.last(t)
	if r.Header.Get("X-Api-Key") != anthropicKey || r.Header.Get("Authorization") != "" {
		t.Errorf("the provider got x-api-key %q, authorization %q; want the node's key alone", r.Header.Get("X-Api-Key"), r.Header.Get("Authorization"))
	}
	if r.Header.Get("Anthropic-Version") == "" || r.Header.Get("Anthropic-Beta") != "interleaved-thinking-2025-05-14" {
		t.Errorf("the provider got anthropic-version %q, anthropic-beta %q", r.Header.Get("Anthropic-Version"), r.Header.Get("Anthropic-Beta"))
	}
	for k, v := range r.Header {
		if strings.Contains(strings.Join(v, " "), p.Token()) {
			t.Errorf("the provider got the agent's token in %s", k)
		}
	}
	c := f.call(t, 1)
	if c.Session != "s-1" || c.Connection != "claude" || c.Model != "claude-sonnet-4-5" || c.Status != 200 || !c.Measured ||
		c.Usage.Input != 100 || c.Usage.Output != 20 || c.Usage.CacheRead != 50 || c.Usage.CacheWrite != 10 {
		t.Errorf("streamed call: %+v; want s-1's, 100 in, 20 out, 50 read from the cache, 10 written", c)
	}

	msg, err := client.Messages.New(ctx, hello)
	if err != nil || msg.Content[0].Text != "ok" {
		t.Fatalf("a call not streamed: %v %+v", err, msg)
	}
	if c := f.call(t, 2); c.Usage.Input != 12 || c.Usage.Output != 3 || c.Usage.CacheRead != 40 || c.Usage.CacheWrite != 5 {
		t.Errorf("call not streamed: %+v; want 12 in, 3 out, 40 read, 5 written", c.Usage)
	}
	if n := testutil.ToFloat64(f.metrics.ModelTokens.WithLabelValues("claude", "claude-sonnet-4-5", "input")); n != 112 {
		t.Errorf("agentmux_model_tokens_total{kind=input} = %v; want 112", n)
	}
	if n := testutil.ToFloat64(f.metrics.ModelRequests.WithLabelValues("claude", "claude-sonnet-4-5", "200")); n != 2 {
		t.Errorf("agentmux_model_requests_total{code=200} = %v; want 2", n)
	}
}

// TestOpenAIThroughTheGateway: the official SDK calls Chat Completions (streamed and
// not) and Responses; a streamed Chat Completions call is asked for its usage, which
// the provider leaves out otherwise; cached tokens are counted apart from the input.
func TestOpenAIThroughTheGateway(t *testing.T) {
	f := newFixture(t)
	p := f.pass(t, "oa", "s-2")
	client := f.openAI(p)
	ctx := context.Background()
	chat := openai.ChatCompletionNewParams{Model: "gpt-5", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}}

	stream := client.Chat.Completions.NewStreaming(ctx, chat)
	for stream.Next() {
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	r, body := f.p.last(t)
	if r.Header.Get("Authorization") != "Bearer "+openAIKey {
		t.Errorf("the provider got authorization %q; want the node's key", r.Header.Get("Authorization"))
	}
	if opts, _ := body["stream_options"].(map[string]any); opts["include_usage"] != true {
		t.Errorf("the streamed call was sent on without stream_options.include_usage: %v", body)
	}
	if c := f.call(t, 1); c.Session != "s-2" || c.Model != "gpt-5" || c.Usage.Input != 200 || c.Usage.CacheRead != 100 || c.Usage.Output != 70 {
		t.Errorf("streamed chat call: %+v; want 200 in, 100 from the cache, 70 out", c)
	}

	if _, err := client.Chat.Completions.New(ctx, chat); err != nil {
		t.Fatal(err)
	}
	if c := f.call(t, 2); c.Usage.Input != 20 || c.Usage.CacheRead != 10 || c.Usage.Output != 7 {
		t.Errorf("chat call not streamed: %+v; want 20 in, 10 from the cache, 7 out", c.Usage)
	}

	rs := client.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "gpt-5-codex", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")}})
	for rs.Next() {
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	if c := f.call(t, 3); c.Model != "gpt-5-codex" || c.Usage.Input != 400 || c.Usage.CacheRead != 600 || c.Usage.Output != 90 {
		t.Errorf("responses call: %+v; want gpt-5-codex, 400 in, 600 from the cache, 90 out", c)
	}
	// gpt-5-codex is named by neither the connection nor [pricing]: its label is other.
	if n := testutil.ToFloat64(f.metrics.ModelRequests.WithLabelValues("oa", "other", "200")); n != 1 {
		t.Errorf("agentmux_model_requests_total{model=other} = %v; want 1", n)
	}
}

// TestGeminiThroughTheGateway: Gemini's generateContent, streamed as server-sent events
// (alt=sse, as the Gemini CLI asks), as one JSON array, and not streamed: the provider
// sees the node's key in x-goog-api-key and never the token (in the header or the URL);
// the model is the one the path names, then the one that answered; thinking is output,
// the cached content apart from the input.
func TestGeminiThroughTheGateway(t *testing.T) {
	f := newFixture(t)
	p := f.pass(t, "gem", "s-g")
	post := func(path string) string {
		t.Helper()
		req, _ := http.NewRequest("POST", f.g.URL()+"/gem/v1beta/models/gemini-2.5-pro:"+path, strings.NewReader(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`))
		req.Header.Set("X-Goog-Api-Key", p.Token())
		req.Header.Set("Content-Type", "application/json")
		resp, err := f.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	if got := post("streamGenerateContent?alt=sse&key=" + p.Token()); !strings.Contains(got, "data: ") {
		t.Fatalf("the stream: %q", got)
	}
	r, _ := f.p.last(t)
	if r.Header.Get("X-Goog-Api-Key") != geminiKey || r.URL.Query().Has("key") || r.URL.Query().Get("alt") != "sse" {
		t.Errorf("the provider got x-goog-api-key %q and query %q; want the node's key, alt=sse and no key in the URL", r.Header.Get("X-Goog-Api-Key"), r.URL.RawQuery)
	}
	want := func(n int, c Call, model string, in, cached, out int64) {
		t.Helper()
		if c.Session != "s-g" || c.Model != model || !c.Measured || c.Usage.Input != in || c.Usage.CacheRead != cached || c.Usage.Output != out || len(c.Finish) != 1 || c.Finish[0] != "STOP" {
			t.Errorf("call %d: %+v; want %s, %d in, %d from the cache, %d out, finished STOP", n, c, model, in, cached, out)
		}
	}
	want(1, f.call(t, 1), "gemini-2.5-pro-001", 300, 200, 42)
	post("streamGenerateContent")
	want(2, f.call(t, 2), "gemini-2.5-pro-001", 300, 200, 42)
	post("generateContent")
	want(3, f.call(t, 3), "gemini-2.5-pro", 50, 0, 5)

	// Gemini's other calls are not passed on, and an error is Gemini's.
	req, _ := http.NewRequest("POST", f.g.URL()+"/gem/v1beta/cachedContents", strings.NewReader("{}"))
	req.Header.Set("X-Goog-Api-Key", p.Token())
	resp, err := f.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || !strings.Contains(string(b), `"status":"NOT_FOUND"`) {
		t.Errorf("POST /v1beta/cachedContents: %d %s; want 404 in Gemini's error format", resp.StatusCode, b)
	}
}

// TestTheGatewayRefuses plays the calls it must not pass on: no token, a made-up one,
// a revoked pass's (its process ended), one between sessions, another connection's,
// a held session's, an endpoint that is not a model call, a body too large. Each is
// answered in the provider's error format, and none reaches the provider.
func TestTheGatewayRefuses(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	revoked := f.pass(t, "claude", "s-old")
	revoked.Revoke()
	between := f.pass(t, "claude", "s-done")
	between.Bind("", nil)
	held := f.pass(t, "claude", "s-held")
	held.Hold("the session reached its budget")
	oa := f.pass(t, "oa", "s-oa")
	live := f.pass(t, "claude", "s-live")
	for _, c := range []struct {
		name, token string
		status      int
		says        string
	}{
		{"a made-up token", "amx-00000000000000000000000000000000", 401, "not a token this node's gateway issued"},
		{"a revoked pass", revoked.Token(), 401, "not a token this node's gateway issued"},
		{"between sessions", between.Token(), 403, "no session runs on this agent now"},
		{"another connection's", oa.Token(), 403, "this token is for connection oa"},
		{"a held session", held.Token(), 403, "the session reached its budget"},
	} {
		client := anthropic.NewClient(aoption.WithBaseURL(f.g.URL()+"/claude"), aoption.WithAPIKey(c.token), aoption.WithMaxRetries(0), aoption.WithHTTPClient(f.http))
		_, err := client.Messages.New(ctx, hello)
		var apiErr *anthropic.Error
		if !asError(err, &apiErr) || apiErr.StatusCode != c.status || !strings.Contains(apiErr.RawJSON(), c.says) || !strings.Contains(apiErr.RawJSON(), `"type":"error"`) {
			t.Errorf("%s: %v; want %d saying %q, as Anthropic's API says an error", c.name, err, c.status, c.says)
		}
	}
	// No token at all (the SDK sends none without one).
	resp, err := f.http.Post(f.g.URL()+"/claude/v1/messages", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.Contains(string(body), `"type":"authentication_error"`) {
		t.Errorf("no token: %d %s; want 401, authentication_error", resp.StatusCode, body)
	}
	// Not a model call: the key would do anything else a key may.
	req, _ := http.NewRequest("POST", f.g.URL()+"/claude/v1/files", strings.NewReader("{}"))
	req.Header.Set("X-Api-Key", live.Token())
	if resp, err := f.http.Do(req); err != nil || resp.StatusCode != 404 {
		t.Errorf("POST /v1/files: %v %v; want 404", resp, err)
	} else {
		resp.Body.Close()
	}
	big := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(strings.Repeat("x", 2<<20)))}}
	client := f.anthropic(live)
	if _, err := client.Messages.New(ctx, big); err == nil || !strings.Contains(err.Error(), "larger than the gateway takes") {
		t.Errorf("a body over max_body: %v", err)
	}
	if n := f.p.calls(); n != 0 {
		t.Errorf("%d refused calls reached the provider", n)
	}
	if n := testutil.ToFloat64(f.metrics.GatewayRefused.WithLabelValues("token")); n != 3 {
		t.Errorf("agentmux_gateway_refused_total{reason=token} = %v; want 3", n)
	}
}

// TestProviderLimitsAreRecorded: a provider's 429 goes back to the agent as it came,
// and the call says its status and retry-after.
func TestProviderLimitsAreRecorded(t *testing.T) {
	f := newFixture(t)
	f.p.status = http.StatusTooManyRequests
	p := f.pass(t, "claude", "s-limited")
	client := f.anthropic(p)
	_, err := client.Messages.New(context.Background(), hello)
	var apiErr *anthropic.Error
	if !asError(err, &apiErr) || apiErr.StatusCode != 429 || !strings.Contains(apiErr.RawJSON(), "slow down") {
		t.Fatalf("the agent got %v; want the provider's 429", err)
	}
	if c := f.call(t, 1); c.Status != 429 || c.RetryAfter != 7*time.Second || c.Measured {
		t.Errorf("call: %+v; want status 429, retry-after 7s, nothing measured", c)
	}
	if n := testutil.ToFloat64(f.metrics.ModelRequests.WithLabelValues("claude", "claude-sonnet-4-5", "429")); n != 1 {
		t.Errorf("agentmux_model_requests_total{code=429} = %v; want 1", n)
	}
}

// TestAnUnreachableProvider: the agent is told, in the provider's format, that the
// gateway did not reach it; the call says no status.
func TestAnUnreachableProvider(t *testing.T) {
	f := newFixture(t)
	f.p.srv.Close()
	p := f.pass(t, "oa", "s-down")
	client := f.openAI(p)
	_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-5", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var apiErr *openai.Error
	if !asError(err, &apiErr) || apiErr.StatusCode != 502 || !strings.Contains(apiErr.Message, "did not reach connection oa") {
		t.Fatalf("the agent got %v; want a 502 in OpenAI's format", err)
	}
	if c := f.call(t, 1); c.Status != 0 || c.Measured {
		t.Errorf("call: %+v; want no status", c)
	}
}

// TestAGatewayListensOnLoopbackOnly: the tokens travel in the clear.
func TestAGatewayListensOnLoopbackOnly(t *testing.T) {
	g, err := New(Config{Metrics: metrics.New(), Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start("0.0.0.0:0"); err == nil || !strings.Contains(err.Error(), "not a loopback address") {
		t.Fatalf("Start on 0.0.0.0: %v", err)
	}
}

func asError[T error](err error, target *T) bool { return errors.As(err, target) }

// TestACallIsASpanOfItsSession: with a tracer, each call is a client span "chat
// <model>" in the trace its pass was bound with, carrying what the provider counted
// and why the answer ended, as OpenTelemetry's GenAI conventions name them.
func TestACallIsASpanOfItsSession(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	f := newFixture(t)
	f.g.cfg.Tracer = tp.Tracer("test")
	session, span := tp.Tracer("test").Start(context.Background(), "session s-traced")
	p := f.pass(t, "claude", "s-traced")
	p.Bind("s-traced", session)
	client := f.anthropic(p)
	stream := client.Messages.NewStreaming(context.Background(), hello)
	for stream.Next() {
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	f.call(t, 1)
	span.End()
	var chat sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "chat claude-sonnet-4-5" {
			chat = s
		}
	}
	if chat == nil {
		t.Fatalf("no span chat claude-sonnet-4-5 among %d", len(rec.Ended()))
	}
	if chat.Parent().SpanID() != span.SpanContext().SpanID() || chat.SpanKind() != trace.SpanKindClient {
		t.Errorf("the call's span is not a client span of its session's")
	}
	attrs := map[string]string{}
	for _, kv := range chat.Attributes() {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	for k, want := range map[string]string{"gen_ai.provider.name": "anthropic", "gen_ai.response.model": "claude-sonnet-4-5",
		"gen_ai.usage.input_tokens": "160", "gen_ai.usage.output_tokens": "20", "gen_ai.usage.cache_read.input_tokens": "50",
		"gen_ai.response.finish_reasons": `["end_turn"]`, "agentmux.session": "s-traced", "http.response.status_code": "200"} {
		if attrs[k] != want {
			t.Errorf("%s = %q; want %q", k, attrs[k], want)
		}
	}
}

// TestConnectionLimitsApplyToTheWholeNode: with concurrency = 1, a second agent's call
// waits until the first one's answer ends, and never reaches the provider beside it;
// with requests_per_minute = 60 and a burst of 1, the next call waits its second.
func TestConnectionLimitsApplyToTheWholeNode(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	inFlight, most, calls := 0, 0, 0
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inFlight++
		calls++
		most = max(most, inFlight)
		first := calls == 1
		mu.Unlock()
		if first {
			<-release // the first answer is held until the second call waits
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"model":"m","usage":{"prompt_tokens":1,"completion_tokens":1}}`)
		mu.Lock()
		inFlight--
		mu.Unlock()
	}))
	t.Cleanup(provider.Close)
	set := metrics.New()
	g, err := New(Config{Connections: map[string]*config.Connection{
		"one":  {Name: "one", Provider: "openai", BaseURL: provider.URL, RateLimit: &config.RateLimit{Concurrency: 1}},
		"slow": {Name: "slow", Provider: "openai", BaseURL: provider.URL, RateLimit: &config.RateLimit{RequestsPerMinute: 60, Burst: 1}},
	}, Metrics: set, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close(context.Background()) })
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	call := func(connection string, p *Pass) int {
		req, _ := http.NewRequest("POST", g.URL()+"/"+connection+"/chat/completions", strings.NewReader(`{"model":"m","messages":[]}`))
		req.Header.Set("Authorization", "Bearer "+p.Token())
		resp, err := hc.Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	pass := func(connection, session string) *Pass {
		p, err := g.Issue(connection, nil)
		if err != nil {
			t.Fatal(err)
		}
		p.Bind(session, nil)
		return p
	}
	a, b := pass("one", "s-a"), pass("one", "s-b")
	done := make(chan int, 2)
	go func() { done <- call("one", a) }()
	proctest.Eventually(t, "the first call at the provider", func() bool { mu.Lock(); defer mu.Unlock(); return calls == 1 })
	go func() { done <- call("one", b) }()
	proctest.Eventually(t, "the second call waiting its turn", func() bool {
		return g.limits["one"].waiting.Load() == 1
	})
	close(release)
	if s1, s2 := <-done, <-done; s1 != 200 || s2 != 200 {
		t.Fatalf("statuses %d, %d", s1, s2)
	}
	if most != 1 {
		t.Errorf("%d calls were at the provider at once; want 1", most)
	}

	slow := pass("slow", "s-slow")
	if call("slow", slow) != 200 || call("slow", slow) != 200 {
		t.Fatal("the slow connection's calls failed")
	}
	var m dto.Metric
	if err := set.ModelLimitWait.WithLabelValues("slow").(prometheus.Histogram).Write(&m); err != nil {
		t.Fatal(err)
	}
	if h := m.GetHistogram(); h.GetSampleCount() != 2 || h.GetSampleSum() < 0.5 {
		t.Errorf("the slow connection's waits: %d calls, %.3f s in all; want the second to wait about a second", h.GetSampleCount(), h.GetSampleSum())
	}
}

// TestACallsBodiesAreKeptForTheAudit: with KeepBodies, a call carries its request as
// sent on and its answer as streamed, without the agent's token (which an agent may
// put in its own request); cut to what is kept, with their whole lengths.
func TestACallsBodiesAreKeptForTheAudit(t *testing.T) {
	f := newFixture(t)
	f.g.cfg.KeepBodies = 1 << 20
	p := f.pass(t, "claude", "s-kept")
	leak := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("my token is " + p.Token()))}}
	client := f.anthropic(p)
	stream := client.Messages.NewStreaming(context.Background(), leak)
	for stream.Next() {
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	c := f.call(t, 1)
	b := c.Bodies
	if b == nil {
		t.Fatal("no bodies kept")
	}
	if b.Method != "POST" || b.Path != "/v1/messages" || !strings.Contains(string(b.Request), `my token is [redacted]`) || strings.Contains(string(b.Request), p.Token()) {
		t.Errorf("the request kept: %s %s %s; want it with the token cut out", b.Method, b.Path, b.Request)
	}
	if !strings.Contains(string(b.Response), "event: message_delta") || int64(len(b.Response)) != b.ResponseBytes || b.RequestCut || b.ResponseCut {
		t.Errorf("the answer kept: %d of %d bytes: %s", len(b.Response), b.ResponseBytes, b.Response)
	}

	f.g.cfg.KeepBodies = 100
	if _, err := client.Messages.New(context.Background(), leak); err != nil {
		t.Fatal(err)
	}
	if b := f.call(t, 2).Bodies; len(b.Request) != 100 || b.RequestBytes <= 100 || len(b.Response) != 100 || b.ResponseBytes <= 100 || !b.RequestCut || !b.ResponseCut {
		t.Errorf("bodies cut to 100 bytes: request %d of %d, answer %d of %d", len(b.Request), b.RequestBytes, len(b.Response), b.ResponseBytes)
	}
}
