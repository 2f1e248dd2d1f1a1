package node

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/agenttest"
	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/wire"
)

// TestClaudeCodeThroughTheGateway: the real Claude Code, on a host whose model is
// reached through the node's gateway, is given no key: its environment names none,
// and the scripted API sees the node's key on every call. The session spent what the
// API counted (100 tokens in and 20 out a call), which is what Claude Code claims too.
func TestClaudeCodeThroughTheGateway(t *testing.T) {
	dir := t.TempDir()
	f := newFakeAnthropic(t,
		[]block{{Text: "I will look."}, {Tool: "Bash", Input: map[string]any{"command": "echo looked", "description": "look"}}},
		[]block{{Text: "Done."}},
	)
	const key = "sk-ant-node-secret"
	home := t.TempDir()
	n := start(t, fmt.Sprintf(`[connections.claude]
provider = "anthropic"
api_key_env = "NODE_ANTHROPIC_KEY"
base_url = %q
[hosts.claude]
command = %q
dialect = "claude-code"
working_dir = %q
stop_grace = "2s"
model = { connection = "claude" }
env = { HOME = %q, CLAUDE_CONFIG_DIR = %q, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1", DISABLE_TELEMETRY = "1", DISABLE_AUTOUPDATER = "1", AGENTMUX_TEST_MARK = "@MARK@" }
[supervisors.ops]
strategy = "rule"
rules = [{ type = "approval", match = "^Bash: echo ", answer = "yes" }]
[[routes]]
supervisor = "ops"
`, f.URL(), claudeBinary(t), dir, home, filepath.Join(home, ".claude")), nodeKey("NODE_ANTHROPIC_KEY", key))
	res := n.run("claude", "look around")
	if !res.OK || !strings.Contains(string(res.Payload), "Done.") {
		t.Fatalf("result %+v %s", res, res.Payload)
	}
	keys := f.Keys()
	if len(keys) == 0 {
		t.Fatal("no call reached the scripted API")
	}
	onlyNodeKey(t, keys, key)
	spend := res.Usage.Spend(func(string, *protocol.Usage) (float64, bool) { return 0, false })
	if want := int64(len(keys)); spend == nil || spend.InputTokens != 100*want || spend.OutputTokens != 20*want {
		t.Errorf("the session's spend: %+v; want what the API counted for its %d calls: %d in, %d out", spend, want, 100*want, 20*want)
	}
	if agreed := testutil.ToFloat64(n.n.Metrics.UsageClaims.WithLabelValues("claude", "true")); agreed != 1 {
		t.Errorf("usage_claims_total{agreed=true} = %v; want Claude Code's claim to agree with the measure", agreed)
	}
}

// spender is an agent behind the gateway that calls its model until it is refused,
// then says what it was told: the calls' statuses and the refusal.
const spender = `import json, os, sys, time, urllib.request, urllib.error
msg = json.loads(sys.stdin.readline())
base, token = os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"]
statuses, refusal = [], ""
deadline = time.time() + 30
while time.time() < deadline:
    body = json.dumps({"model": "fake-model", "messages": [{"role": "user", "content": "more"}]}).encode()
    req = urllib.request.Request(base + "/chat/completions", data=body, headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            r.read()
            statuses.append(r.status)
    except urllib.error.HTTPError as e:
        statuses.append(e.code)
        refusal = e.read().decode()
        break
    time.sleep(0.05)
print(json.dumps({"type": "result", "text": json.dumps({"statuses": statuses, "refusal": refusal})}), flush=True)
`

// TestABudgetActsBeforeTheMoneyIsSpent: a session behind the gateway that reaches its
// token budget (the scripted API counts 120 tokens a call) is paused, and its next
// call is answered by the gateway, in the provider's error format, saying why: it
// never reaches the provider.
func TestABudgetActsBeforeTheMoneyIsSpent(t *testing.T) {
	api := agenttest.NewChatCompletions(t)
	n := start(t, fmt.Sprintf(`[connections.oa]
provider = "openai"
base_url = %q
[hosts.spender]
command = "python3"
args = ["-c", %q]
budget = { tokens = 200 }
model = { connection = "oa" }
env = { AGENTMUX_TEST_MARK = "@MARK@" }
[supervisors.treasurer]
strategy = "human"
[[routes]]
type = "budget"
supervisor = "treasurer"
`, api.URL(), spender))
	res := n.run("spender", "spend")
	var told struct {
		Statuses []int  `json:"statuses"`
		Refusal  string `json:"refusal"`
	}
	if err := json.Unmarshal([]byte(resultText(t, res)), &told); err != nil {
		t.Fatalf("result %+v %s: %v", res, res.Payload, err)
	}
	if len(told.Statuses) != 3 || told.Statuses[0] != 200 || told.Statuses[1] != 200 || told.Statuses[2] != 403 {
		t.Errorf("the calls were answered %v; want two, then a refusal", told.Statuses)
	}
	var refusal struct {
		Error struct {
			Message, Type string
			Code          any
		}
	}
	if json.Unmarshal([]byte(told.Refusal), &refusal) != nil || !strings.Contains(refusal.Error.Message, "reached its budget") || refusal.Error.Type != "invalid_request_error" {
		t.Errorf("the refusal %q; want OpenAI's error format, saying the budget was reached", told.Refusal)
	}
	if calls := len(api.Keys()); calls != 2 {
		t.Errorf("%d calls reached the provider; want 2: the third was refused in the node", calls)
	}
}

// resultText is the text of a session's result.
func resultText(t *testing.T, res *agent.Result) string {
	t.Helper()
	var r struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(res.Payload, &r); err != nil || r.Text == "" {
		t.Fatalf("no result's text in %+v %s: %v", res, res.Payload, err)
	}
	return r.Text
}

// TestCodexThroughTheGateway: the real Codex, on a host whose model is reached through
// the node's gateway, is pointed at it by its dialect (Codex reads no OPENAI_BASE_URL):
// the scripted Responses API sees the node's key on every call, and the session spent
// what the API counted, priced from the manifest.
func TestCodexThroughTheGateway(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "hello.txt")
	f := newFakeResponses(t, agenttest.Exec("echo hi > "+target), call{Text: "Written."})
	const key = "sk-node-openai-secret"
	n := start(t, fmt.Sprintf(`[connections.oai]
provider = "openai"
api_key_env = "NODE_OPENAI_KEY"
base_url = "%s/v1"
models = ["gpt-fake"]
[pricing.gpt-fake]
input_per_mtok = 1
output_per_mtok = 5
[hosts.codex]
command = %q
args = ["-c", 'model="gpt-fake"', "-c", 'sandbox_mode="danger-full-access"']  # Codex's bubblewrap fails now and then under load (TestCodexApprovedAndDeclinedCommands)
dialect = "codex"
working_dir = %q
stop_grace = "2s"
model = { connection = "oai" }
env = { HOME = %q, CODEX_HOME = %q, AGENTMUX_TEST_MARK = "@MARK@" }
`, f.URL(), agenttest.Codex(t), dir, t.TempDir(), t.TempDir())+agentSupervisors, nodeKey("NODE_OPENAI_KEY", key))
	res := n.run("codex", "write hi")
	if !res.OK || !strings.Contains(string(res.Payload), "Written.") {
		t.Fatalf("result %+v %s", res, res.Payload)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "hi\n" {
		t.Fatalf("the approved command did not run: %q %v", b, err)
	}
	keys := f.Keys()
	if len(keys) < 2 {
		t.Fatalf("%d calls reached the scripted API; want the script's 2", len(keys))
	}
	onlyNodeKey(t, keys, key)
	calls := int64(len(keys))
	priced := config.Pricing{"gpt-fake": {InputPerMTok: 1, OutputPerMTok: 5}}
	spend := res.Usage.Spend(priced.Cost)
	if spend == nil || spend.InputTokens != 100*calls || spend.OutputTokens != 20*calls || math.Abs(spend.CostUSD-float64(calls)*200e-6) > 1e-12 {
		t.Errorf("the session's spend: %+v; want what the API counted for its %d calls: %d in, %d out, $%g", spend, calls, 100*calls, 20*calls, float64(calls)*200e-6)
	}
	if agreed := testutil.ToFloat64(n.n.Metrics.UsageClaims.WithLabelValues("codex", "true")); agreed != 1 {
		t.Errorf("usage_claims_total{agreed=true} = %v; want Codex's claim to agree with the measure", agreed)
	}
}

// TestQwenCodeThroughTheGateway: the real Qwen Code, an ACP agent of an
// OpenAI-compatible provider, reads the gateway's OPENAI_BASE_URL and OPENAI_API_KEY
// from its environment.
func TestQwenCodeThroughTheGateway(t *testing.T) {
	f := agenttest.NewChatCompletions(t)
	throughTheGateway(t, f, fmt.Sprintf("provider = \"openai\"\nbase_url = %q\n", f.URL()), "run_shell_command", func(dir string) string {
		return fmt.Sprintf(`[hosts.agent]
command = %q
args = ["--acp", "--auth-type", "openai", "-m", "fake-model"]
dialect = "acp"
working_dir = %q
stop_grace = "2s"
model = { connection = "m" }
env = { HOME = %q, AGENTMUX_TEST_MARK = "@MARK@" }
`, agenttest.NPMAgent(t, "@qwen-code/qwen-code", agenttest.QwenVersion, "qwen"), dir, t.TempDir())
	})
}

// TestOpenCodeThroughTheGateway: the real OpenCode names the gateway's variables in its
// config ({env:OPENAI_BASE_URL}).
func TestOpenCodeThroughTheGateway(t *testing.T) {
	config, _ := json.Marshal(map[string]any{
		"provider": map[string]any{"gw": map[string]any{"npm": "@ai-sdk/openai-compatible", "name": "Gateway",
			"options": map[string]any{"baseURL": "{env:OPENAI_BASE_URL}", "apiKey": "{env:OPENAI_API_KEY}"}, "models": map[string]any{"fake-model": map[string]any{"name": "Fake"}}}},
		"model": "gw/fake-model", "small_model": "gw/fake-model",
		"permission": map[string]any{"bash": "ask", "edit": "ask"}, "autoupdate": false, "share": "disabled",
	})
	f := agenttest.NewChatCompletions(t)
	throughTheGateway(t, f, fmt.Sprintf("provider = \"openai\"\nbase_url = %q\n", f.URL()), "bash", func(dir string) string {
		return fmt.Sprintf(`[hosts.agent]
command = %q
args = ["acp"]
dialect = "acp"
working_dir = %q
stop_grace = "2s"
model = { connection = "m" }
env = { HOME = %q, OPENCODE_CONFIG_CONTENT = %q, OPENCODE_DISABLE_MODELS_FETCH = "1", OPENCODE_DISABLE_AUTOUPDATE = "1", OPENCODE_DISABLE_LSP_DOWNLOAD = "1", OPENCODE_DISABLE_DEFAULT_PLUGINS = "1", AGENTMUX_TEST_MARK = "@MARK@" }
`, agenttest.NPMAgent(t, "opencode-ai", agenttest.OpenCodeVersion, "opencode"), dir, t.TempDir(), string(config))
	})
}

// TestGeminiCLIThroughTheGateway: the real Gemini CLI reads the gateway's
// GOOGLE_GEMINI_BASE_URL and GEMINI_API_KEY from its environment.
func TestGeminiCLIThroughTheGateway(t *testing.T) {
	f := agenttest.NewGeminiAPI(t)
	throughTheGateway(t, f, fmt.Sprintf("provider = \"gemini\"\nbase_url = %q\n", f.URL()), "run_shell_command", func(dir string) string {
		return fmt.Sprintf(`[hosts.agent]
command = %q
args = ["--acp"]
dialect = "acp"
working_dir = %q
stop_grace = "2s"
model = { connection = "m" }
env = { HOME = %q, GEMINI_CLI_NO_RELAUNCH = "true", AGENTMUX_TEST_MARK = "@MARK@" }
`, agenttest.Gemini(t), dir, t.TempDir())
	})
}

// throughTheGateway runs one session of an agent, the host "agent" of hostBlock(dir),
// on connection "m" (its provider and base_url in connection), whose shell tool writes
// a file: every call it makes (its own side calls among them) reaches the scripted API
// f with the node's key, and is the session's spend.
func throughTheGateway(t *testing.T, f interface {
	Replay(...agenttest.Call)
	Keys() []string
}, connection, tool string, hostBlock func(dir string) string) {
	dir := t.TempDir()
	target := filepath.Join(dir, "hello.txt")
	f.Replay(shell(tool, "echo hi > "+target, "greet"), agenttest.Call{Text: "Written."})
	const key = "sk-node-secret"
	n := start(t, "[connections.m]\napi_key_env = \"NODE_MODEL_KEY\"\n"+connection+hostBlock(dir)+agentSupervisors, nodeKey("NODE_MODEL_KEY", key))
	res := n.run("agent", "write hi")
	if !res.OK {
		t.Fatalf("result %+v %s", res, res.Payload)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "hi\n" {
		t.Fatalf("the approved command did not run: %q %v", b, err)
	}
	keys := f.Keys()
	if len(keys) < 2 {
		t.Fatalf("%d calls reached the scripted API; want the script's 2 at least", len(keys))
	}
	onlyNodeKey(t, keys, key)
	calls := int64(len(keys))
	spend := res.Usage.Spend(func(string, *protocol.Usage) (float64, bool) { return 0, false })
	if spend == nil || spend.InputTokens != 100*calls || spend.OutputTokens != 20*calls {
		t.Errorf("the session's spend: %+v; want what the API counted for its %d calls: %d in, %d out", spend, calls, 100*calls, 20*calls)
	}
}

// TestClaudeCodeStopsAtItsBudgetBehindTheGateway: the real Claude Code, behind the
// gateway with a budget of 100 tokens, spends 120 on its first call (the scripted API's
// count, counted before the answer reached Claude Code): the session pauses and asks,
// Claude Code is interrupted and its calls held, so no call past the budget reaches the
// provider. Refused the raise, the session ends at its budget.
func TestClaudeCodeStopsAtItsBudgetBehindTheGateway(t *testing.T) {
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notes, []byte("ship on friday\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFakeAnthropic(t, []block{{Tool: "Read", Input: map[string]any{"file_path": notes}}}, []block{{Text: "never"}})
	n := start(t, fmt.Sprintf("[connections.claude]\nprovider = \"anthropic\"\nbase_url = %q\n", f.URL())+
		claudeHost(t, "claude", f, dir, "budget = { tokens = 100 }\nmodel = { connection = \"claude\" }\nquestion_timeout = \"1m\"")+budgetRoutes+agentSupervisors)
	results := make(chan *agent.Result, 1)
	session := n.n.Submit("claude", "", "read the notes", results)
	pending := pendingStore(t, n)
	p := waitPending(t, pending, session)
	if p.Request != "budget-1" || !strings.HasSuffix(p.Text, "spent 120 tokens of 100; go on with +100 tokens?") {
		t.Fatalf("%s waits (%q); want the budget's request, at the 120 tokens the provider counted", p.Request, p.Text)
	}
	if _, err := pending.Respond(context.Background(), p.ID, "alice", wire.RespondRequest{Value: json.RawMessage(`"no"`)}); err != nil {
		t.Fatal(err)
	}
	res := <-results
	if res.OK || !res.BudgetExceeded {
		t.Fatalf("result %+v; want budget_exceeded", res)
	}
	if calls := len(f.Keys()); calls != 1 {
		t.Errorf("%d calls reached the provider; want 1: none past the budget", calls)
	}
}

// TestARateLimitIsRecordedForTheSession: the provider answers Claude Code's first call
// 429 with retry-after 1; the session's events and the connection's metrics record it,
// and Claude Code, retrying after it, ends its session ok.
func TestARateLimitIsRecordedForTheSession(t *testing.T) {
	dir := t.TempDir()
	f := newFakeAnthropic(t, []block{{Text: "Done."}})
	f.Limit(1, "1")
	n := start(t, fmt.Sprintf("[connections.claude]\nprovider = \"anthropic\"\nbase_url = %q\n", f.URL())+
		claudeHost(t, "claude", f, dir, "model = { connection = \"claude\" }")+agentSupervisors)
	events := make(chan *nats.Msg, 16)
	sub, err := n.n.Bus.Conn.ChanSubscribe(wire.EventSubject("claude", "*", wire.EventModelCall), events)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if res := n.run("claude", "say done"); !res.OK {
		t.Fatalf("result %+v %s", res, res.Payload)
	}
	var limited *wire.ModelCall
	for limited == nil {
		select {
		case m := <-events:
			var c wire.ModelCall
			if err := json.Unmarshal(m.Data, &c); err != nil {
				t.Fatal(err)
			}
			if c.Status == 429 {
				limited = &c
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no model.call event of a 429")
		}
	}
	if limited.RetryAfterMs != 1000 || limited.Connection != "claude" || limited.Usage != nil {
		t.Errorf("the 429's model.call: %+v; want retry_after_ms 1000 on claude, no usage", limited)
	}
	var got float64
	for _, m := range []string{"other", "none"} {
		got += testutil.ToFloat64(n.n.Metrics.ModelRequests.WithLabelValues("claude", m, "429"))
	}
	if got != 1 {
		t.Errorf("agentmux_model_requests_total{code=429} = %v; want 1", got)
	}
}

// nodeKey gives the node the provider's key in its environment, as variable name: the
// only place it is.
func nodeKey(name, key string) func(*Options) {
	return func(o *Options) {
		o.Getenv = func(k string) string {
			if k == name {
				return key
			}
			return ""
		}
	}
}

// onlyNodeKey checks that every call reached the scripted API with the node's key.
func onlyNodeKey(t *testing.T, keys []string, key string) {
	t.Helper()
	for i, k := range keys {
		if k != key {
			t.Errorf("call %d reached the API with %q; want the node's key", i, k)
		}
	}
}
