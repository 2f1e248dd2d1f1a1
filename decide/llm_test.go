package decide

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/wire"
)

// llmManifest is an llm supervisor "architect" on the fake, falling back to rules.
func llmManifest(t *testing.T, f *fakeModel, extra string) *config.Manifest {
	t.Helper()
	c := f.connection()
	src := fmt.Sprintf(`[connections.fake]
provider = %q
base_url = %q
api_key_env = "FAKE_MODEL_KEY"
default_model = "fake-model-1"
[supervisors.architect]
strategy = "llm"
connection = "fake"
system_prompt = "You guard the payments service."
temperature = 0.1
fallback = "rules"
%s
[supervisors.rules]
strategy = "rule"
rules = [{ type = "question", match = ".", answer = "fallback answer" }, { type = "approval", match = ".", answer = "no" }]
`, c.Provider, c.BaseURL, extra)
	m, err := config.Parse("m.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

type observed struct {
	mu    sync.Mutex
	calls []LLMCall
}

func (o *observed) observe(c LLMCall) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, c)
}

func newArchitect(t *testing.T, m *config.Manifest, obs *observed) Decider {
	t.Helper()
	deps := Deps{Manifest: m, Getenv: func(k string) string {
		if k == "FAKE_MODEL_KEY" {
			return "sk-test"
		}
		return ""
	}}
	if obs != nil {
		deps.Observe = obs.observe
	}
	d, err := New(m.Supervisors["architect"], deps)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// request builds a Request from the agent's JSON, as the supervisor actor does.
func request(t *testing.T, session, body string, within time.Duration) *Request {
	t.Helper()
	msg, err := protocol.Decode([]byte(body), protocol.PlainTextResult)
	if err != nil {
		t.Fatal(err)
	}
	return &Request{Host: "w", Session: session, Type: string(msg.Type), ID: msg.ID, Text: msg.RequestText(),
		Request: json.RawMessage(body), Default: json.RawMessage(`"skip"`), Deadline: time.Now().Add(within)}
}

func decideOK(t *testing.T, d Decider, r *Request) Decision {
	t.Helper()
	dec, err := d.Decide(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return dec
}

func TestOpenAIAnswersInTheQuestionsShape(t *testing.T) {
	f := newFakeModel(t, config.ProviderOpenAI,
		turn{text: `{"answer":"e2e","reason":"the change touches the checkout flow","risk_level":"low"}`},
		turn{text: "```json\n{\"answer\": true, \"reason\": \"safe\", \"risk_level\": \"low\"}\n```"},
	)
	obs := &observed{}
	d := newArchitect(t, llmManifest(t, f, ""), obs)
	dec := decideOK(t, d, request(t, "s1", `{"type":"question","id":"q1","kind":"select","question":"Which suite?","context":"changed checkout.go","options":[{"value":"unit"},{"value":"e2e","description":"slow but thorough"}]}`, time.Minute))
	if string(dec.Value) != `"e2e"` || dec.Decider != "llm:architect/fake-model-1" || dec.Reason != "the change touches the checkout flow" {
		t.Fatalf("decision %+v", dec)
	}
	req := f.request(0)
	if req["model"] != "fake-model-1" || req["temperature"] != 0.1 {
		t.Errorf("model/temperature sent: %v %v", req["model"], req["temperature"])
	}
	msgs := req["messages"].([]any)
	system := msgs[0].(map[string]any)["content"].(string)
	user := msgs[len(msgs)-1].(map[string]any)["content"].(string)
	if !strings.HasPrefix(system, "You guard the payments service.") || !strings.Contains(user, "Which suite?") ||
		!strings.Contains(user, "changed checkout.go") || !strings.Contains(user, `"e2e": slow but thorough`) {
		t.Errorf("prompt:\nsystem: %s\nuser: %s", system, user)
	}
	schema, _ := json.Marshal(req["response_format"])
	if !strings.Contains(string(schema), `"enum":["unit","e2e"]`) || !strings.Contains(string(schema), `"type":"json_schema"`) {
		t.Errorf("response_format: %s", schema)
	}
	// Confirm: a boolean, even inside a code fence.
	dec = decideOK(t, d, request(t, "s1", `{"type":"question","id":"q2","kind":"confirm","question":"Run the migration?"}`, time.Minute))
	if string(dec.Value) != `true` {
		t.Fatalf("confirm decided %s", dec.Value)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.calls) != 2 || obs.calls[0].InputTokens != 120 || obs.calls[0].OutputTokens != 30 || obs.calls[0].Outcome != "ok" {
		t.Errorf("observed calls %+v", obs.calls)
	}
}

func TestApprovalsAreStructuredAndGarbageIsADeny(t *testing.T) {
	for _, provider := range []string{config.ProviderOpenAI, config.ProviderAnthropic} {
		t.Run(provider, func(t *testing.T) {
			garbage := turn{text: "Sure, go ahead!"}
			if provider == config.ProviderAnthropic {
				garbage.asText = true
			}
			f := newFakeModel(t, provider,
				turn{text: `{"decision":"approve","reason":"read-only","risk_level":"low"}`},
				turn{text: `{"decision":"deny","reason":"drops a table","risk_level":"critical"}`},
				garbage,
			)
			d := newArchitect(t, llmManifest(t, f, ""), nil)
			approval := `{"type":"approval","id":"a1","description":"psql -c 'select 1'"}`
			if dec := decideOK(t, d, request(t, "s1", approval, time.Minute)); string(dec.Value) != `"yes"` || dec.RiskLevel != "low" {
				t.Errorf("approve → %+v", dec)
			}
			if dec := decideOK(t, d, request(t, "s1", approval, time.Minute)); string(dec.Value) != `"no"` || dec.Reason != "drops a table" {
				t.Errorf("deny → %+v", dec)
			}
			if dec := decideOK(t, d, request(t, "s1", approval, time.Minute)); string(dec.Value) != `"no"` || !strings.Contains(dec.Reason, "unparseable") {
				t.Errorf("garbage → %+v; want a deny that says why", dec)
			}
		})
	}
}

func TestFailuresFallBackBeforeTheDeadline(t *testing.T) {
	for _, c := range []struct {
		name  string
		turns []turn
	}{
		{"500", []turn{{status: 500}, {status: 500}, {status: 500}}},
		{"429", []turn{{status: 429}, {status: 429}, {status: 429}}},
		{"slow", []turn{{hang: true}}},
		{"wrong shape", []turn{{text: `{"answer":"e3","reason":"","risk_level":"low"}`}}},
	} {
		for _, provider := range []string{config.ProviderOpenAI, config.ProviderAnthropic} {
			t.Run(c.name+"/"+provider, func(t *testing.T) {
				f := newFakeModel(t, provider, c.turns...)
				d := newArchitect(t, llmManifest(t, f, ""), nil)
				r := request(t, "s1", `{"type":"question","id":"q1","kind":"select","question":"Which suite?","options":["unit","e2e"]}`, 3*time.Second)
				dec := decideOK(t, d, r)
				if time.Now().After(r.Deadline) {
					t.Fatalf("decided after the deadline")
				}
				if string(dec.Value) != `"fallback answer"` || dec.Decider != "rule:rules" || !strings.HasPrefix(dec.Reason, "fallback after: ") {
					t.Fatalf("decision %+v; want the fallback's, with the reason", dec)
				}
				if calls := f.calls(); calls > 1+sdkRetries {
					t.Fatalf("%d calls; retries must be bounded by %d", calls, sdkRetries)
				}
			})
		}
	}
}

func TestWithoutFallbackAFailureIsAnError(t *testing.T) {
	f := newFakeModel(t, config.ProviderOpenAI, turn{status: 400})
	m := llmManifest(t, f, "")
	m.Supervisors["architect"].Fallback = ""
	d := newArchitect(t, m, nil)
	if _, err := d.Decide(context.Background(), request(t, "s1", `{"type":"question","id":"q1","question":"?"}`, time.Minute)); err == nil {
		t.Fatal("a 400 without a fallback must be an error (the runtime writes the default)")
	}
}

func TestMemoryCarriesEarlierExchangesOfTheSameSession(t *testing.T) {
	for _, provider := range []string{config.ProviderOpenAI, config.ProviderAnthropic} {
		t.Run(provider, func(t *testing.T) {
			reply := turn{text: `{"answer":"Postgres","reason":"already used","risk_level":"low"}`}
			f := newFakeModel(t, provider, reply, reply, reply)
			d := newArchitect(t, llmManifest(t, f, `memory = "session"`), nil)
			decideOK(t, d, request(t, "s1", `{"type":"question","id":"q1","question":"Which database?"}`, time.Minute))
			decideOK(t, d, request(t, "s1", `{"type":"question","id":"q2","question":"Which driver for it?"}`, time.Minute))
			decideOK(t, d, request(t, "s2", `{"type":"question","id":"q1","question":"Which cache?"}`, time.Minute))
			msgs := func(i int) []any { return f.request(i)["messages"].([]any) }
			second, _ := json.Marshal(msgs(1))
			if !strings.Contains(string(second), "Which database?") || !strings.Contains(string(second), "already used") {
				t.Fatalf("the second question's conversation lacks the first exchange: %s", second)
			}
			other, _ := json.Marshal(msgs(2))
			if strings.Contains(string(other), "Which database?") {
				t.Fatalf("another session's history leaked: %s", other)
			}
		})
	}
}

func TestAnthropicIsMadeToCallTheDecideTool(t *testing.T) {
	f := newFakeModel(t, config.ProviderAnthropic, turn{text: `{"answer":["lint","vet"],"reason":"fast checks","risk_level":"low"}`})
	d := newArchitect(t, llmManifest(t, f, "max_tokens = 300"), nil)
	dec := decideOK(t, d, request(t, "s1", `{"type":"question","id":"q1","kind":"select","multi":true,"question":"Which checks?","options":["lint","vet","race"]}`, time.Minute))
	if string(dec.Value) != `["lint","vet"]` {
		t.Fatalf("decision %+v", dec)
	}
	req := f.request(0)
	choice, _ := json.Marshal(req["tool_choice"])
	tools, _ := json.Marshal(req["tools"])
	system, _ := json.Marshal(req["system"])
	if string(choice) != `{"name":"decide","type":"tool"}` || !strings.Contains(string(tools), `"items":{"enum":["lint","vet","race"],"type":"string"}`) ||
		req["max_tokens"] != 300.0 || !strings.Contains(string(system), "payments service") {
		t.Fatalf("request: tool_choice %s\ntools %s\nmax_tokens %v\nsystem %s", choice, tools, req["max_tokens"], system)
	}
}

func TestMissingAPIKeySaysWhichVariable(t *testing.T) {
	f := newFakeModel(t, config.ProviderOpenAI)
	m := llmManifest(t, f, "")
	_, err := New(m.Supervisors["architect"], Deps{Manifest: m, Getenv: func(string) string { return "" }})
	if err == nil || !strings.Contains(err.Error(), "$FAKE_MODEL_KEY, which is not set") {
		t.Fatalf("err = %v", err)
	}
}

func TestToolResultPostProcessed(t *testing.T) {
	f := newFakeModel(t, config.ProviderOpenAI, turn{text: `{"answer":{"rows":1,"email":"[redacted]"},"reason":"PII removed"}`})
	m := llmManifest(t, f, "")
	m.Tools = map[string]*config.Tool{"lookup": {Name: "lookup", Process: config.Process{Command: "sh", Args: []string{"-c", `cat >/dev/null; echo '{"rows":1,"email":"a@b.c"}'`}}, Timeout: config.Duration(5 * time.Second)}}
	d := newArchitect(t, m, nil)
	r := request(t, "s1", `{"type":"tool_call","id":"t1","tool":"lookup","args":{"user":"ada"}}`, time.Minute)
	raw := decideOK(t, d, r)
	if string(raw.Value) != `{"rows":1,"email":"a@b.c"}` || raw.Decider != "tool:lookup" {
		t.Fatalf("without post_process: %+v", raw)
	}
	r.PostProcess = true
	dec := decideOK(t, d, r)
	if string(dec.Value) != `{"email":"[redacted]","rows":1}` && string(dec.Value) != `{"rows":1,"email":"[redacted]"}` {
		t.Fatalf("post-processed: %+v", dec)
	}
	user := f.request(0)["messages"].([]any)[1].(map[string]any)["content"].(string)
	if !strings.Contains(user, `"email":"a@b.c"`) {
		t.Fatalf("the model was not shown the tool's result: %s", user)
	}
}

// memPending is an in-memory Pending store.
type memPending struct {
	mu    sync.Mutex
	items []*wire.PendingRequest
}

func (m *memPending) Create(_ context.Context, p *wire.PendingRequest) (*wire.PendingRequest, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, have := range m.items {
		if have.ID == p.ID {
			return have, nil
		}
	}
	m.items = append(m.items, p)
	return p, nil
}

// Admit admits every request: the cap is the node's (store.PendingStore).
func (m *memPending) Admit(*wire.PendingRequest, int) (int, bool) { return 0, true }

func (m *memPending) Forget(string) {}

func TestEscalationByRiskLevel(t *testing.T) {
	f := newFakeModel(t, config.ProviderOpenAI,
		turn{text: `{"decision":"approve","reason":"harmless","risk_level":"low"}`},
		turn{text: `{"decision":"approve","reason":"rewrites history","risk_level":"critical"}`},
	)
	m := llmManifest(t, f, `escalate = { to = "oncall", risk_level = ["high", "critical"] }
[supervisors.oncall]
strategy = "human"`)
	store := &memPending{}
	d, err := New(m.Supervisors["architect"], Deps{Manifest: m, Pending: store, Getenv: func(string) string { return "sk-test" }})
	if err != nil {
		t.Fatal(err)
	}
	low := request(t, "s1", `{"type":"approval","id":"a1","description":"git status"}`, time.Minute)
	low.ReplyTo = "_INBOX.1"
	if dec := decideOK(t, d, low); string(dec.Value) != `"yes"` || dec.Verdict == Defer {
		t.Fatalf("low risk: %+v", dec)
	}
	high := request(t, "s1", `{"type":"approval","id":"a2","description":"git push --force"}`, time.Minute)
	high.ReplyTo = "_INBOX.2"
	dec := decideOK(t, d, high)
	if dec.Verdict != Defer || dec.Decider != "human:oncall" {
		t.Fatalf("critical risk: %+v; want it deferred to oncall", dec)
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	p := store.items[0]
	if len(store.items) != 1 || string(p.Suggestion) != `"yes"` || p.ReplyTo != "_INBOX.2" || !strings.Contains(p.Escalation, "rated the risk critical: rewrites history") {
		t.Fatalf("pending %+v", p)
	}
}

// A server that ignores response_format answers in prose: a free-form question takes the
// prose as its answer; a question whose answer has a shape does not, and falls back.
func TestPlainTextReplyAnswersAFreeFormQuestion(t *testing.T) {
	f := newFakeModel(t, config.ProviderOpenAI,
		turn{text: "  Use PostgreSQL {with JSONB} for the settings table.\n"},
		turn{text: "Sure, design it as a state machine."},
		turn{text: "e2e, because checkout changed"},
		turn{text: "staging"},
		turn{text: `{"decision":"prod","reason":"the fix is for prod","risk_level":"low"}`},
	)
	d := newArchitect(t, llmManifest(t, f, ""), nil)
	dec := decideOK(t, d, request(t, "s1", `{"type":"question","id":"q1","question":"Which database?"}`, time.Minute))
	if string(dec.Value) != `"Use PostgreSQL {with JSONB} for the settings table."` || dec.Decider != "llm:architect/fake-model-1" ||
		dec.Reason != "the model replied in plain text" {
		t.Fatalf("prompt question: %+v", dec)
	}
	dec = decideOK(t, d, request(t, "s1", `{"type":"question","id":"q2","kind":"design","question":"How should the flow work?"}`, time.Minute))
	if string(dec.Value) != `"Sure, design it as a state machine."` {
		t.Fatalf("free-form kind: %+v", dec)
	}
	dec = decideOK(t, d, request(t, "s1", `{"type":"question","id":"q3","kind":"select","question":"Which suite?","options":["unit","e2e"]}`, time.Minute))
	if dec.Decider != "rule:rules" || !strings.Contains(dec.Reason, "no JSON object") {
		t.Fatalf("select answered in prose: %+v; want the fallback, saying why", dec)
	}
	// Options on a prompt question are suggestions (protocol.md): prose is the answer.
	dec = decideOK(t, d, request(t, "s1", `{"type":"question","id":"q4","question":"Which environment?","options":["staging","prod"]}`, time.Minute))
	if string(dec.Value) != `"staging"` || dec.Reason != "the model replied in plain text" {
		t.Fatalf("prompt question with suggested options answered in prose: %+v", dec)
	}
	dec = decideOK(t, d, request(t, "s1", `{"type":"question","id":"q5","question":"Which environment?","options":["staging","prod"]}`, time.Minute))
	if string(dec.Value) != `"prod"` || dec.Reason != "the fix is for prod" {
		t.Fatalf("prompt question answered in an approval's shape: %+v; want its decision as the answer", dec)
	}
}

// TestModelIsToldOfConflicts: the model deciding a request to change files another live
// session on the repository touched is told which session, on which branch, and which
// files, over the real OpenAI client.
func TestModelIsToldOfConflicts(t *testing.T) {
	f := newFakeModel(t, config.ProviderOpenAI, turn{text: `{"decision":"deny","reason":"s-other is editing it","risk_level":"medium"}`})
	d := newArchitect(t, llmManifest(t, f, ""), nil)
	r := request(t, "s1", `{"type":"approval","id":"a1","description":"Edit main.go","tool":"Edit","input":{"file_path":"main.go"}}`, time.Minute)
	r.Conflicts = []wire.WorkspaceConflict{{Paths: []string{"main.go"}, Session: "s-other", Host: "coder", Branch: "agentmux/s-other",
		Kind: wire.TouchChanged, Time: time.Now().Add(-40 * time.Second).UnixMilli()}}
	if dec := decideOK(t, d, r); string(dec.Value) != `"no"` {
		t.Fatalf("%+v", dec)
	}
	body, _ := json.Marshal(f.request(0))
	want := regexp.MustCompile(`Beware: session s-other \(host coder, branch agentmux/s-other\) has changed main.go, 4\ds ago`)
	if !want.Match(body) {
		t.Errorf("the model was not told %s:\n%s", want, body)
	}
}
