package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/agentmux/agentmux/node"
	"github.com/agentmux/agentmux/protocol"
)

const (
	demoTick    = 250 * time.Millisecond
	demoTimeout = 2 * time.Minute
)

func demo(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("demo", stdout, stderr)
	sessions := fs.Int("sessions", 200, "concurrent scripted agent sessions")
	logLevel := fs.String("log", "error", "log `level`")
	if _, err := parse(fs, args); err != nil {
		return usageError(stderr, err)
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "agentmux demo: cannot find my own binary to run `agentmux sim`:", err)
		return exitError
	}
	dir, err := os.MkdirTemp("", "agentmux-demo-")
	if err != nil {
		fmt.Fprintln(stderr, "agentmux demo:", err)
		return exitError
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "demo.toml")
	llm := demoLLM(os.Getenv)
	if err := os.WriteFile(path, []byte(demoManifest(self, *sessions, llm)), 0o600); err != nil {
		fmt.Fprintln(stderr, "agentmux demo:", err)
		return exitError
	}
	m, code := loadManifest(path, stderr)
	if m == nil {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), demoTimeout)
	defer cancel()
	n, err := node.Start(ctx, node.Options{Manifest: m, Log: newLogger(stderr, *logLevel), Ephemeral: true, NoTasks: true, MetricsAddr: "127.0.0.1:0"})
	if err != nil {
		fmt.Fprintln(stderr, "agentmux demo:", err)
		return exitError
	}
	defer func() { _ = n.Stop(context.Background()) }()
	dflt := "default (static; set OPENAI_API_KEY or ANTHROPIC_API_KEY for an llm)"
	if llm != "" {
		dflt = "default (llm " + m.Supervisors["default"].ModelID + ", falling back to static)"
	}
	fmt.Fprintf(stderr, "agentmux demo: %d scripted agents, supervisors security (rule), qa (rule), %s, oncall (nobody)\n", *sessions, dflt)
	fmt.Fprintf(stderr, "NATS %s · metrics http://%s/metrics\n\n", n.Bus.ClientURL(), n.MetricsAddr())

	begun := time.Now()
	results := make(chan *node.Result, *sessions)
	for i := range *sessions {
		n.Submit("sim", "", demoScript(i), results)
	}
	var all []*node.Result
	answered := 0
	tick := time.NewTicker(demoTick)
	defer tick.Stop()
	terminal := isTerminal(stderr)
	lastLine := time.Time{}
	live := func() {
		if !terminal && time.Since(lastLine) < time.Second {
			return // a line a second into logs and pipes, a live line on a terminal
		}
		lastLine = time.Now()
		end := "\n"
		if terminal {
			end = ""
			fmt.Fprint(stderr, "\r")
		}
		fmt.Fprintf(stderr, "sessions running %4d  done %4d/%d  requests answered %5d  %5.1fs%s",
			*sessions-len(all), len(all), *sessions, answered, time.Since(begun).Seconds(), end)
	}
	for len(all) < *sessions {
		select {
		case r := <-results:
			all = append(all, r)
			answered += len(r.Requests)
		case <-tick.C:
			live()
		case <-ctx.Done():
			fmt.Fprintln(stderr, "\nruntime demo: sessions did not finish in time")
			return exitError
		}
	}
	lastLine = time.Time{}
	live()
	if terminal {
		fmt.Fprintln(stderr)
	}
	printSummary(stdout, all, time.Since(begun))
	printStaged(stdout, *sessions)
	return exitOK
}

// demoLLM is the connection the demo's default supervisor uses when an API key is in
// the environment, or "" for the static one. OPENAI_BASE_URL points it at any Chat
// Completions server; AGENTMUX_DEMO_MODEL picks the model.
func demoLLM(getenv func(string) string) string {
	model := getenv("AGENTMUX_DEMO_MODEL")
	switch {
	case getenv("OPENAI_API_KEY") != "":
		if model == "" {
			model = "gpt-4.1-mini"
		}
		conn := fmt.Sprintf("[connections.llm]\nprovider = \"openai\"\napi_key_env = \"OPENAI_API_KEY\"\ndefault_model = %q\n", model)
		if base := getenv("OPENAI_BASE_URL"); base != "" {
			conn += fmt.Sprintf("base_url = %q\n", base)
		}
		return conn
	case getenv("ANTHROPIC_API_KEY") != "":
		if model == "" {
			model = "claude-sonnet-4-5"
		}
		return fmt.Sprintf("[connections.llm]\nprovider = \"anthropic\"\napi_key_env = \"ANTHROPIC_API_KEY\"\ndefault_model = %q\n", model)
	}
	return ""
}

// demoManifest is the demo's manifest: one host of scripted agents and supervisors
// routed by content; with llm (a [connections.llm] table) the default supervisor is a
// model that falls back to the static answers.
func demoManifest(self string, pool int, llm string) string {
	questionTimeout := "10s" // generous: 200 agents starting at once on a small machine
	dflt := "[supervisors.default]\nstrategy = \"static\"\n"
	if llm != "" {
		questionTimeout = "30s" // a model takes seconds; the unanswered question waits this long
		dflt = llm + `
[supervisors.default]
strategy = "llm"
connection = "llm"
system_prompt = "You supervise scripted demo agents. Prefer safe, simple choices."
fallback = "static"

[supervisors.static]
strategy = "static"
`
	}
	user := "" // a node run as root runs agents as root only when its manifest says so
	if os.Geteuid() == 0 {
		user = "user = \"root\"   # the demo's own scripted agents, run by root\n"
	}
	return fmt.Sprintf(`[hosts.sim]
command = %q
args = ["sim"]
pool = %d
nice = 10             # 200 agents starting at once yield the cores to the node answering them
timeout = "90s"
init_timeout = "60s"  # 200 processes start at once: on a busy machine init_ack can take a while
question_timeout = %q
question_default = "skip"
approval_default = "no"
%s
[hosts.sim.params]
role = "demo"

[supervisors.security]
strategy = "rule"
rules = [
  { type = "question", match = "(?i)token|auth|secret", answer = "Use RS256 with rotating keys" },
  { type = "approval", match = "(?i)rm -rf|drop table", answer = "no" },
]

[supervisors.qa]
strategy = "rule"
rules = [
  { type = "question", match = "(?i)run the .*tests", answer = true },
  { type = "question", match = "(?i)framework", answer = "pytest" },
]

%sanswers = { question = "Proceed with the simplest safe option", approval = "yes", tool_call = { rows = 1, user = "ada" } }

[supervisors.oncall]
strategy = "external"   # served elsewhere; nobody runs it in the demo

[[routes]]
match = "(?i)token|auth|secret|rm -rf|drop table"
supervisor = "security"

[[routes]]
type = "question"
match = "(?i)test"
supervisor = "qa"

[[routes]]
match = "(?i)on-call|page"
supervisor = "oncall"

[[routes]]
supervisor = "default"
`, self, pool, questionTimeout, user, dflt)
}

// demoScript is session i's script: progress, partials, an unknown type, a question
// whose topic picks its supervisor, an approval, sometimes a tool call; a few sessions
// carry the cases worth seeing (a timeout, an invalid answer, a cancelled request, a
// crash, a garbage line).
func demoScript(i int) string {
	var steps []string
	send := func(json string) { steps = append(steps, `{"send":`+json+`}`) }
	await := func(id string) { steps = append(steps, `{"await":"`+id+`"}`) }
	send(`{"type":"progress","message":"reading the repository","percent":10}`)
	send(`{"type":"partial","text":"Plan: "}`)
	send(`{"type":"telemetry","tokens":1200}`)
	switch i % 4 {
	case 0:
		send(`{"type":"question","id":"q1","question":"Which auth token signing algorithm should we use?"}`)
	case 1:
		send(`{"type":"question","id":"q1","kind":"confirm","question":"Shall I run the integration tests now?"}`)
	case 2:
		send(`{"type":"question","id":"q1","kind":"select","question":"Which test framework?","options":["pytest","unittest"]}`)
	default:
		send(`{"type":"question","id":"q1","question":"What should the release notes say?","context":"v1.4"}`)
	}
	await("q1")
	switch {
	case i == 13:
		send(`{"type":"question","id":"q2","kind":"confirm","question":"Page the on-call engineer?","timeout_ms":1500}`)
		await("q2")
	case i%25 == 7:
		send(`{"type":"question","id":"q2","kind":"confirm","question":"Deploy to staging now?"}`)
		await("q2")
	case i == 21:
		send(`{"type":"question","id":"q2","question":"Page someone about the flaky build?"}`)
	}
	if i%10 == 0 {
		send(`{"type":"approval","id":"a1","description":"rm -rf build/ before the release","risk_level":"high"}`)
	} else {
		send(`{"type":"approval","id":"a1","description":"write src/handler.go"}`)
	}
	await("a1")
	if i%5 == 0 {
		send(`{"type":"tool_call","id":"t1","tool":"lookup_user","args":{"email":"ada@example.com"}}`)
		await("t1")
	}
	if i == 42 {
		steps = append(steps, `{"exit":3}`)
	}
	if i == 99 {
		steps = append(steps, `{"raw":"{this is not json"}`)
	}
	send(`{"type":"progress","message":"writing the patch","percent":90}`)
	send(`{"type":"partial","text":"done."}`)
	steps = append(steps, `{"result":"session complete"}`)
	return `{"steps":[` + strings.Join(steps, ",") + `]}`
}

func printSummary(w io.Writer, all []*node.Result, took time.Duration) {
	ok, failed := 0, map[string]int{}
	outcomes := map[protocol.Outcome]int{}
	deciders := map[string]int{}
	var questions []time.Duration
	for _, r := range all {
		if r.OK {
			ok++
		} else {
			failed[r.Error]++
		}
		for _, q := range r.Requests {
			outcomes[q.Outcome]++
			deciders[q.Decider]++
			if q.Type == protocol.TypeQuestion && q.Outcome == protocol.OutcomeAnswered && q.Decider != "default" {
				questions = append(questions, q.Latency)
			}
		}
	}
	fmt.Fprintf(w, "\nsessions   ok %d   err %d   (%.1fs)\n", ok, len(all)-ok, took.Seconds())
	for _, e := range sortedKeys(failed) {
		fmt.Fprintf(w, "  err: %-40s %d\n", e, failed[e])
	}
	fmt.Fprintln(w, "\nrequests by outcome")
	for _, o := range []protocol.Outcome{protocol.OutcomeAnswered, protocol.OutcomeDefaulted, protocol.OutcomeTimedOut, protocol.OutcomeInvalid, protocol.OutcomeCancelled} {
		fmt.Fprintf(w, "  %-12s %6d\n", o, outcomes[o])
	}
	fmt.Fprintln(w, "\nrequests by decider")
	for _, d := range sortedKeys(deciders) {
		fmt.Fprintf(w, "  %-18s %6d\n", d, deciders[d])
	}
	sort.Slice(questions, func(i, j int) bool { return questions[i] < questions[j] })
	fmt.Fprintf(w, "\nquestion round trip (supervisor answered, %d)   p50 %v   p99 %v\n",
		len(questions), percentile(questions, 0.50), percentile(questions, 0.99))
}

// printStaged says which of the summary's failures demoScript stages on purpose among
// n sessions, and what to try after the demo.
func printStaged(w io.Writer, n int) {
	invalid := 0
	for i := range n {
		if i%25 == 7 {
			invalid++
		}
	}
	var staged []string
	if n > 42 {
		staged = append(staged, "err 1: the 43rd agent exits with status 3 mid-session; its session fails, saying how it exited")
	}
	if n > 13 {
		staged = append(staged, "timed_out 1: the 14th asks to page the on-call engineer; oncall's supervisor runs nowhere, so the default answer is written at the 1.5 s deadline")
	}
	if invalid > 0 {
		staged = append(staged, fmt.Sprintf("invalid %d: agents asking \"Deploy to staging now?\" (a yes/no question) get the static supervisor's text, which does not fit; the runtime writes the default instead", invalid))
	}
	if n > 21 {
		staged = append(staged, "cancelled 1: the 22nd asks a question and ends without waiting for its answer")
	}
	if n > 99 {
		staged = append(staged, "the 100th writes a line that is not JSON: reported (frame_invalid), skipped, its session goes on")
	}
	if len(staged) > 0 {
		fmt.Fprintln(w, "\nstaged on purpose, to show what agentmux does with each (anything else above is not):")
		for _, s := range staged {
			fmt.Fprintln(w, "  "+s)
		}
	}
	fmt.Fprint(w, `
try next:
  go run ./cmd/runtime run -c examples/worker.toml worker "add login" --events   # one Python agent's session, each event
  go run ./cmd/runtime up -c examples/worker.toml                                 # a node; then, in another terminal:
  go run ./cmd/runtime submit worker "add login" --follow                         # a task to it, followed to its result
  go run ./cmd/runtime console -c examples/worker.toml                            # the web console people answer from
`)
	if os.Geteuid() == 0 {
		fmt.Fprint(w, `  (run as root, a node refuses to start an agent that would be root too: give examples/worker.toml's
   [hosts.worker] a user = "<an unprivileged user>" first, or user = "root"; docs/security.md)
`)
	}
}

func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)-1))
	return sorted[i].Round(time.Microsecond)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
