package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/agenttest"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/internal/testdeps"
)

// jaeger runs Jaeger (v2, built from its module on first use) with an OTLP/HTTP receiver
// and its query API on free loopback ports, keeping traces in memory, and returns both
// addresses.
func jaeger(t *testing.T) (otlp, query string) {
	t.Helper()
	bin := testdeps.Jaeger(t)
	otlp, query = fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(t)), fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(t))
	config := filepath.Join(t.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(config, fmt.Appendf(nil, `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces: { receivers: [otlp], processors: [batch], exporters: [jaeger_storage_exporter] }
  telemetry:
    metrics: { level: none }
    logs: { level: warn }
extensions:
  jaeger_storage:
    backends: { mem: { memory: { max_traces: 1000 } } }
  jaeger_query:
    storage: { traces: mem }
    http: { endpoint: %q }
    grpc: { endpoint: "127.0.0.1:%d" }
receivers:
  otlp:
    protocols: { http: { endpoint: %q } }
processors:
  batch: { timeout: 100ms }
exporters:
  jaeger_storage_exporter: { trace_storage: mem }
`, query, proctest.FreePort(t), otlp), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, exec.Command(bin, "--config=file:"+config))
	proctest.Within(t, 30*time.Second, func() error {
		resp, err := http.Get("http://" + query + "/api/services")
		if err != nil {
			return fmt.Errorf("jaeger's query API: %v\n%s", err, p.stderr)
		}
		resp.Body.Close()
		return nil
	})
	return otlp, query
}

// jaegerTrace is a trace as Jaeger's query API gives it.
type jaegerTrace struct {
	TraceID string `json:"traceID"`
	Spans   []struct {
		SpanID     string `json:"spanID"`
		Operation  string `json:"operationName"`
		ProcessID  string `json:"processID"`
		References []struct {
			RefType string `json:"refType"`
			SpanID  string `json:"spanID"`
		} `json:"references"`
		Tags []struct {
			Key   string `json:"key"`
			Value any    `json:"value"`
		} `json:"tags"`
	} `json:"spans"`
	Processes map[string]struct {
		Service string `json:"serviceName"`
		Tags    []struct {
			Key   string `json:"key"`
			Value any    `json:"value"`
		} `json:"tags"`
	} `json:"processes"`
}

// TestFleetTraceInJaeger: two `agentmux up` processes, one running the agent and one
// its llm supervisor, export their spans to a real Jaeger with OTLP, configured only by
// the standard OTEL_EXPORTER_OTLP_ENDPOINT. The question the agent asks on node a and
// the model answers on node b is one trace: session > request > decide > chat, each on
// the node that did it.
func TestFleetTraceInJaeger(t *testing.T) {
	t.Parallel()
	otlp, query := jaeger(t)
	model := agenttest.ChatAnswer(t, `{"answer":"Postgres","reason":"it runs already","risk_level":"low"}`)
	port := proctest.FreePort(t)
	manifest := func(dir, nats string) string {
		path := filepath.Join(dir, "agentmux.toml")
		m := nats + fmt.Sprintf(`[metrics]
addr = "127.0.0.1:0"
[hosts.w]
command = %q
args = ["sim"]
env = { AGENTMUX_RUNTIME_MAIN = "1" }
stop_grace = "2s"
[connections.fake]
provider = "openai"
base_url = "%s/v1"
api_key_env = "AGENTMUX_TEST_MODEL_KEY"
default_model = "fake-1"
[supervisors.architect]
strategy = "llm"
connection = "fake"
[[routes]]
supervisor = "architect"
`, os.Args[0], model)
		if err := os.WriteFile(path, []byte(m), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	const user = "user = \"fleet\"\npassword_env = \"AGENTMUX_TEST_FLEET_PASSWORD\"\n"
	dirA := t.TempDir()
	a := manifest(dirA, fmt.Sprintf("[nats]\nlisten = \"127.0.0.1:%d\"\nstore_dir = %q\n%s[[nats.users]]\nname = \"fleet\"\npassword_env = \"AGENTMUX_TEST_FLEET_PASSWORD\"\nrole = \"node\"\n",
		port, filepath.Join(dirA, "store"), user))
	b := manifest(t.TempDir(), fmt.Sprintf("[nats]\nurl = \"nats://127.0.0.1:%d\"\n%s", port, user))
	traced := func(args ...string) *proc {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + otlp, "OTEL_BSP_SCHEDULE_DELAY=100", "AGENTMUX_TEST_MODEL_KEY=sk-test"}
		return startProc(t, cmd)
	}
	nodeA := traced("up", "-c", a, "--name", "a", "--no-supervisors")
	until(t, "agentmux up (a)", nodeA.stderr, "node up")
	nodeB := traced("up", "-c", b, "--name", "b", "--no-hosts")
	until(t, "agentmux up (b)", nodeB.stderr, "node up")
	if code, out, stderr := runCLI("submit", "-c", a, "--id", "t-traced", "--follow", "w",
		`{"steps":[{"send":{"type":"question","id":"q1","question":"Which database?"}},{"await":"q1"},{"result":"done"}]}`); code != exitOK {
		t.Fatalf("submit: exit %d\n%s%s", code, out, stderr)
	}

	var tr jaegerTrace
	proctest.Within(t, 30*time.Second, func() error {
		var found struct{ Data []jaegerTrace }
		if err := jaegerGet(query, sessionTraces("t-traced"), &found); err != nil {
			return err
		}
		if len(found.Data) != 1 || len(found.Data[0].Spans) < 4 {
			return fmt.Errorf("jaeger holds %d traces of t-traced (want 1, of 4 spans or more): %+v", len(found.Data), found.Data)
		}
		tr = found.Data[0]
		return nil
	})
	byName := map[string]string{} // operation → span id
	parent := map[string]string{} // span id → parent span id
	node := map[string]string{}   // span id → the node that made it
	tags := map[string]map[string]any{}
	for _, s := range tr.Spans {
		byName[s.Operation] = s.SpanID
		for _, r := range s.References {
			if r.RefType == "CHILD_OF" {
				parent[s.SpanID] = r.SpanID
			}
		}
		for _, tag := range tr.Processes[s.ProcessID].Tags {
			if tag.Key == "service.instance.id" {
				node[s.SpanID] = fmt.Sprint(tag.Value)
			}
		}
		tags[s.SpanID] = map[string]any{}
		for _, tag := range s.Tags {
			tags[s.SpanID][tag.Key] = tag.Value
		}
	}
	chain := []struct{ name, parent, node string }{
		{"session w", "", "a"}, {"request question", "session w", "a"}, {"decide architect", "request question", "b"}, {"chat fake-1", "decide architect", "b"},
	}
	for _, c := range chain {
		id, ok := byName[c.name]
		switch {
		case !ok:
			t.Errorf("no span %q in the trace: %v", c.name, byName)
		case c.parent != "" && parent[id] != byName[c.parent]:
			t.Errorf("%s's parent is %s; want %s (%s)", c.name, parent[id], c.parent, byName[c.parent])
		case node[id] != c.node:
			t.Errorf("%s was made on node %q; want %q", c.name, node[id], c.node)
		}
	}
	if chat := tags[byName["chat fake-1"]]; fmt.Sprint(chat["gen_ai.usage.input_tokens"]) != "10" || fmt.Sprint(chat["gen_ai.request.model"]) != "fake-1" {
		t.Errorf("the model call's tags: %v", chat)
	}
	if req := tags[byName["request question"]]; fmt.Sprint(req["agentmux.decider"]) != "llm:architect/fake-1" {
		t.Errorf("the request's tags: %v", req)
	}
}

// jaegerGet decodes what Jaeger's query API at query answers to path.
func jaegerGet(query, path string, v any) error {
	resp, err := http.Get("http://" + query + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

// sessionTraces is the query path of agentmux's traces of session.
func sessionTraces(session string) string {
	return `/api/traces?service=agentmux&tags={"agentmux.session":"` + session + `"}&limit=5`
}

// traceOf waits for the trace traceID in Jaeger to hold every one of the operations,
// and returns it.
func traceOf(t *testing.T, query, traceID string, operations ...string) jaegerTrace {
	t.Helper()
	var tr jaegerTrace
	proctest.Within(t, 60*time.Second, func() error {
		var found struct{ Data []jaegerTrace }
		if err := jaegerGet(query, "/api/traces/"+traceID, &found); err != nil {
			return err
		}
		if len(found.Data) != 1 {
			return fmt.Errorf("jaeger holds no trace %s yet", traceID)
		}
		tr = found.Data[0]
		have := map[string]bool{}
		for _, s := range tr.Spans {
			have[s.Operation] = true
		}
		for _, op := range operations {
			if !have[op] {
				return fmt.Errorf("trace %s has no span %q yet: %v", traceID, op, have)
			}
		}
		return nil
	})
	return tr
}

// index maps each operation to its first span's id, and each span to its parent and
// to the service that made it.
func (tr jaegerTrace) index() (spans, parent, service map[string]string) {
	spans, parent, service = map[string]string{}, map[string]string{}, map[string]string{}
	for _, s := range tr.Spans {
		if _, ok := spans[s.Operation]; !ok {
			spans[s.Operation] = s.SpanID
		}
		for _, r := range s.References {
			if r.RefType == "CHILD_OF" {
				parent[s.SpanID] = r.SpanID
			}
		}
		service[s.SpanID] = tr.Processes[s.ProcessID].Service
	}
	return spans, parent, service
}

// under reports whether span lies under ancestor.
func (jaegerTrace) under(span, ancestor string, parent map[string]string) bool {
	for id := parent[span]; id != ""; id = parent[id] {
		if id == ancestor {
			return true
		}
	}
	return false
}

// runTraced writes a manifest of host (its [hosts.X] table) whose approvals of echo
// rule supervisor ops allows, starts a node exporting to otlp, and submits a task to
// hostName under the client's trace (TRACEPARENT), waiting for it to end.
func runTraced(t *testing.T, otlp, host, hostName, clientTrace, clientSpan string) {
	t.Helper()
	manifest := filepath.Join(t.TempDir(), "agentmux.toml")
	m := fmt.Sprintf("[nats]\nlisten = \"127.0.0.1:%d\"\nstore_dir = %q\n[metrics]\naddr = \"127.0.0.1:0\"\n", proctest.FreePort(t), filepath.Join(t.TempDir(), "store")) + host + `
[supervisors.ops]
strategy = "rule"
rules = [{ type = "approval", match = "echo ", answer = "yes" }]
[[routes]]
supervisor = "ops"
`
	if err := os.WriteFile(manifest, []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
	up := exec.Command(os.Args[0], "up", "-c", manifest)
	up.Env = []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + otlp, "OTEL_BSP_SCHEDULE_DELAY=100"}
	node := startProc(t, up)
	until(t, "agentmux up", node.stderr, "node up")
	submit := exec.Command(os.Args[0], "submit", "-c", manifest, "--id", "t-"+hostName+"-traced", "--follow", hostName, "write the file")
	submit.Env = []string{"TRACEPARENT=00-" + clientTrace + "-" + clientSpan + "-01"}
	follow := startProc(t, submit)
	if code := follow.wait(t, 90*time.Second); code != exitOK {
		t.Fatalf("submit --follow: exit %d\n%s%s\nnode:\n%s", code, follow.stdout, follow.stderr, node.stderr)
	}
}

// TestClaudeCodeJoinsTheTrace: a client that runs under a trace (TRACEPARENT, as a CI
// job does) submits a task; the session's span on the node is the client's span's
// child, and the real Claude Code, given the session span's TRACEPARENT, exports its own
// spans (its telemetry on, to the same Jaeger) into that trace, under the session: its
// interaction, and the tool call a rule supervisor approved, with its wait for the
// answer and its own run.
func TestClaudeCodeJoinsTheTrace(t *testing.T) {
	t.Parallel()
	otlp, query := jaeger(t)
	dir := t.TempDir()
	api := agenttest.NewAnthropic(t,
		[]agenttest.Block{{Tool: "Bash", Input: map[string]any{"command": "echo traced > " + filepath.Join(dir, "out"), "description": "write out"}}},
		[]agenttest.Block{{Text: "done"}})
	home := t.TempDir()
	const clientTrace, clientSpan = "5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174"
	runTraced(t, otlp, fmt.Sprintf(`[hosts.claude]
command = %q
dialect = "claude-code"
working_dir = %q
stop_grace = "5s"
env = { HOME = %[3]q, CLAUDE_CONFIG_DIR = %[4]q, ANTHROPIC_BASE_URL = %[5]q, ANTHROPIC_API_KEY = "sk-test", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1", DISABLE_AUTOUPDATER = "1", CLAUDE_CODE_ENABLE_TELEMETRY = "1", CLAUDE_CODE_ENHANCED_TELEMETRY_BETA = "1", OTEL_TRACES_EXPORTER = "otlp", OTEL_METRICS_EXPORTER = "none", OTEL_LOGS_EXPORTER = "none", OTEL_EXPORTER_OTLP_PROTOCOL = "http/protobuf", OTEL_EXPORTER_OTLP_ENDPOINT = "http://%[6]s", OTEL_TRACES_EXPORT_INTERVAL = "200" }
`, agenttest.Claude(t), dir, home, filepath.Join(home, ".claude"), api.URL(), otlp), "claude", clientTrace, clientSpan)
	if b, err := os.ReadFile(filepath.Join(dir, "out")); err != nil || string(b) != "traced\n" {
		t.Fatalf("the approved command wrote %q (%v)", b, err)
	}

	tr := traceOf(t, query, clientTrace, "session claude", "request approval", "claude_code.interaction", "claude_code.tool.blocked_on_user", "claude_code.tool.execution")
	spans, parent, service := tr.index()
	session, interaction := spans["session claude"], spans["claude_code.interaction"]
	if parent[session] != clientSpan || service[session] != "agentmux" {
		t.Errorf("the session's span is a child of %q, from service %q; want the client's span %s, from agentmux", parent[session], service[session], clientSpan)
	}
	if parent[interaction] != session || service[interaction] == "agentmux" {
		t.Errorf("Claude Code's interaction span is a child of %q, from service %q; want the session's span %s, from Claude Code", parent[interaction], service[interaction], session)
	}
	if parent[spans["request approval"]] != session {
		t.Errorf("the approval's span is not the session's child")
	}
	// The tool's own run, and its wait for agentmux's answer, lie under the session.
	for _, op := range []string{"claude_code.tool.blocked_on_user", "claude_code.tool.execution"} {
		if !tr.under(spans[op], session, parent) {
			t.Errorf("Claude Code's %s span does not lie under the session's span", op)
		}
	}
}

// TestCodexJoinsTheTrace: the real Codex app server, its own trace exporter on
// ([otel] trace_exporter in its config.toml, batches every 200 ms), is given the
// session span's context on its turn/start request (the app server's "trace"): its
// turn/start span is the session's child, in the client's trace, and its tool call and
// the approved command's run lie under it.
func TestCodexJoinsTheTrace(t *testing.T) {
	t.Parallel()
	otlp, query := jaeger(t)
	dir := t.TempDir()
	api := agenttest.NewResponses(t, agenttest.Exec("echo traced > "+filepath.Join(dir, "out")), agenttest.Call{Text: "done"})
	argv, _ := json.Marshal(agenttest.CodexProvider(api))
	codexHome := t.TempDir()
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), fmt.Appendf(nil, "[otel]\nenvironment = \"test\"\ntrace_exporter = { otlp-http = { endpoint = \"http://%s/v1/traces\", protocol = \"binary\" } }\n", otlp), 0o600); err != nil {
		t.Fatal(err)
	}
	const clientTrace, clientSpan = "7a8efff798038103d269b633813fc60d", "aee19b7ec3c1b175"
	runTraced(t, otlp, fmt.Sprintf(`[hosts.codex]
command = %q
args = %s
dialect = "codex"
working_dir = %q
stop_grace = "5s"
env = { HOME = %q, CODEX_HOME = %q, FAKE_MODEL_KEY = "sk-test", OTEL_BSP_SCHEDULE_DELAY = "200" }
`, agenttest.Codex(t), argv, dir, t.TempDir(), codexHome), "codex", clientTrace, clientSpan)
	tr := traceOf(t, query, clientTrace, "session codex", "request approval", "turn/start", "handle_tool_call", "codex.process.spawn")
	spans, parent, service := tr.index()
	session := spans["session codex"]
	if parent[session] != clientSpan {
		t.Errorf("the session's span is a child of %q; want the client's span %s", parent[session], clientSpan)
	}
	if turn := spans["turn/start"]; parent[turn] != session || service[turn] != "codex-app-server" {
		t.Errorf("Codex's turn/start span is a child of %q, from %q; want the session's span %s, from codex-app-server", parent[turn], service[turn], session)
	}
	// The tool call and its command's own run lie under the session.
	for _, op := range []string{"handle_tool_call", "codex.process.spawn"} {
		if !tr.under(spans[op], session, parent) {
			t.Errorf("Codex's %s span does not lie under the session's span", op)
		}
	}
}

// TestAPITaskJoinsTheClientsTrace: a CI job that posts a task to the API with its
// traceparent header has the task's session span as its span's child; a traceparent
// that is not one is ignored, and that task's session is a trace of its own.
func TestAPITaskJoinsTheClientsTrace(t *testing.T) {
	t.Parallel()
	otlp, query := jaeger(t)
	manifest := apiManifest(t, "deny")
	up := exec.Command(os.Args[0], "up", "-c", manifest)
	up.Env = []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + otlp, "OTEL_BSP_SCHEDULE_DELAY=100"}
	node := startProc(t, up)
	until(t, "agentmux up", node.stderr, "node up")
	port := proctest.FreePort(t)
	con := exec.Command(os.Args[0], "console", "-c", manifest, "--addr", fmt.Sprintf("127.0.0.1:%d", port))
	con.Env = []string{"TEST_HOOK_TOKEN=" + hookToken, "TEST_OPERATOR_TOKEN=" + operatorToken, "TEST_VIEWER_TOKEN=" + viewerToken}
	until(t, "agentmux console", startProc(t, con).stderr, "console up")

	post := func(id, traceparent string) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"host": "w", "prompt": okScript, "id": id})
		req, _ := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d/v1/tasks", port), bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+operatorToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("traceparent", traceparent)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("POST /v1/tasks %s: %d", id, resp.StatusCode)
		}
	}
	const clientTrace, clientSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	post("t-api-traced", "00-"+clientTrace+"-"+clientSpan+"-01")
	post("t-api-forged", "00-zzzz-b7ad6b7169203331-01")
	spans, parent, _ := traceOf(t, query, clientTrace, "session w").index()
	if parent[spans["session w"]] != clientSpan {
		t.Errorf("the API task's session span is a child of %q; want the client's span %s", parent[spans["session w"]], clientSpan)
	}
	proctest.Within(t, 30*time.Second, func() error {
		var found struct{ Data []jaegerTrace }
		if err := jaegerGet(query, sessionTraces("t-api-forged"), &found); err != nil {
			return err
		}
		if len(found.Data) != 1 {
			return fmt.Errorf("jaeger holds %d traces of t-api-forged; want 1", len(found.Data))
		}
		spans, parent, _ := found.Data[0].index()
		if p := parent[spans["session w"]]; p != "" || found.Data[0].TraceID == clientTrace {
			t.Errorf("the task with an invalid traceparent has its session under %q in trace %s; want a trace of its own", p, found.Data[0].TraceID)
		}
		return nil
	})
}
