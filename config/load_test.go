package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestArchitectureManifestLoads(t *testing.T) {
	m, err := Load("testdata/architecture.toml")
	if err != nil {
		t.Fatal(err)
	}
	w := m.Hosts["worker"]
	if w == nil || w.Command != "python3" || w.Pool != 2 || w.InputFormat != "json" {
		t.Fatalf("worker host: %+v", w)
	}
	if w.Timeout.D() != 600*time.Second || w.QuestionTimeout.D() != 5*time.Second {
		t.Fatalf("durations: timeout %v question_timeout %v", w.Timeout.D(), w.QuestionTimeout.D())
	}
	if string(w.QuestionDefaultJSON) != `"skip"` || string(w.ApprovalDefaultJSON) != `"no"` {
		t.Fatalf("defaults: %s %s", w.QuestionDefaultJSON, w.ApprovalDefaultJSON)
	}
	if string(w.ParamsJSON) != `{"allowed_tools":["read","write"],"model":"opus"}` {
		t.Fatalf("params = %s", w.ParamsJSON)
	}
	sec := m.Supervisors["security"]
	if sec.Strategy != "rule" || len(sec.Rules) != 2 || !sec.Rules[0].Re.MatchString("the AUTH token") || string(sec.Rules[1].AnswerJSON) != `"no"` {
		t.Fatalf("security supervisor: %+v", sec)
	}
	def := m.Supervisors["default"]
	if string(def.AnswersJSON["tool_call"]) != `{"error":"no tools here"}` || string(def.AnswersJSON["approval"]) != `"yes"` {
		t.Fatalf("default answers: %v", def.AnswersJSON)
	}
	if len(m.Routes) != 2 || m.Routes[0].Supervisor != "security" || m.Routes[1].Re != nil {
		t.Fatalf("routes: %+v", m.Routes)
	}
	if m.NATS.Listen != DefaultNATSListen || m.Metrics.Addr != DefaultMetricsAddr {
		t.Fatalf("node defaults: %+v %+v", m.NATS, m.Metrics)
	}
}

func TestConcertoManifestLoads(t *testing.T) {
	m, err := Load("testdata/concerto.toml")
	if err != nil {
		t.Fatal(err)
	}
	if m.Hosts["claude_code"].Timeout.D() != 300*time.Second || m.Hosts["custom_agent"].Command != "python" {
		t.Fatalf("hosts: %+v", m.Hosts)
	}
	if m.Connections["openai"].DefaultModel != "gpt-4o" {
		t.Fatalf("connections: %+v", m.Connections)
	}
}

func parseErr(t *testing.T, src string) *Error {
	t.Helper()
	_, err := Parse("dir/agentmux.toml", []byte(src))
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("Parse = %v; want a config.Error", err)
	}
	return e
}

func TestProblemsHavePositions(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"unknown key", "[hosts.w]\ncommand = \"x\"\ntimout = 5\n",
			`config: hosts.w.timout (agentmux.toml:3:1): unknown key "timout"; known keys here: command`},
		{"unknown key, every key listed (from the struct tags)", "[tools.t]\ncommand = \"x\"\nsandbox_wirte = []\n",
			`config: tools.t.sandbox_wirte (agentmux.toml:3:1): unknown key "sandbox_wirte"; known keys here: command, args, env, inherit_env, working_dir, sandbox, sandbox_write, sandbox_read_deny, user, timeout, description`},
		{"bad duration", "[hosts.w]\ncommand = \"x\"\ntimeout = \"10x\"\n",
			`config: hosts.w.timeout (agentmux.toml:3:1): "10x" is not a duration; use seconds or "90s"`},
		{"syntax", "[hosts.w]\ncommand = \"x\n",
			`config: hosts.w.command (agentmux.toml:2:`},
		{"missing command", "[agents.w]\nargs = []\n",
			`config: agents.w (agentmux.toml:1:1): a host needs a command`},
		{"route to nobody", "[supervisors.a]\nstrategy = \"static\"\nanswers = { question = \"ok\" }\n\n[[routes]]\nsupervisor = \"a\"\n\n[[routes]]\nmatch = \"x\"\nsupervisor = \"b\"\n",
			`config: routes.1.supervisor (agentmux.toml:10:1): no supervisor "b"; define [supervisors.b] or name one of a`},
		{"bad regex in inline rule", "[supervisors.s]\nstrategy = \"rule\"\nrules = [\n  { match = \"ok\", answer = \"x\" },\n  { match = \"(\", answer = \"y\" },\n]\n",
			`config: supervisors.s.rules.1.match (agentmux.toml:4:5): "(" is not a regular expression`},
		{"negative pool", "[hosts.w]\ncommand = \"x\"\npool = -1\n",
			`config: hosts.w.pool (agentmux.toml:3:1): -1 is negative`},
		{"nice raising the priority", "[hosts.w]\ncommand = \"x\"\nnice = -5\n",
			`config: hosts.w.nice (agentmux.toml:3:1): -5 is out of range; use 0 (the node's own priority) to 19 (the lowest): a node lowers its agents' priority, never raises it`},
		{"unknown sandbox", "[hosts.w]\ncommand = \"x\"\nsandbox = \"docker\"\n",
			`config: hosts.w.sandbox (agentmux.toml:3:1): "docker" is not a sandbox; use "landlock" (the default where the kernel has it) or "none"`},
		{"a user without the sandbox", "[hosts.w]\ncommand = \"x\"\nsandbox = \"none\"\nuser = \"agent\"\n",
			`config: hosts.w.user (agentmux.toml:4:1): "agent" needs the sandbox, which starts the program as its user: leave sandbox out, or user`},
		{"empty sandbox path", "[tools.t]\ncommand = \"x\"\nsandbox_read_deny = [\"\"]\n",
			`config: tools.t.sandbox_read_deny (agentmux.toml:3:1): an empty path; name a file or a directory`},
		{"nice beyond the lowest", "[hosts.w]\ncommand = \"x\"\nnice = 20\n",
			`config: hosts.w.nice (agentmux.toml:3:1): 20 is out of range`},
		{"bad approval default", "[hosts.w]\ncommand = \"x\"\napproval_default = \"maybe\"\n",
			`config: hosts.w.approval_default (agentmux.toml:3:1): "maybe" is not an approval answer; use "yes" or "no"`},
		{"unknown section", "[nodes]\nx = 1\n",
			`unknown key "nodes"; the sections are`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := parseErr(t, tc.src)
			if !strings.Contains(e.Error(), tc.want) {
				t.Fatalf("got:\n%s\nwant it to contain:\n%s", e, tc.want)
			}
		})
	}
}

func TestAllProblemsAtOnce(t *testing.T) {
	e := parseErr(t, "[hosts.w]\ncommand = \"\"\ninput_format = \"xml\"\n\n[supervisors.s]\nstrategy = \"oracle\"\n")
	if len(e.Problems) != 3 {
		t.Fatalf("want 3 problems, got:\n%s", e)
	}
	if e.Problems[0].Line > e.Problems[1].Line {
		t.Fatalf("problems not in file order:\n%s", e)
	}
}

func TestDurationForms(t *testing.T) {
	m, err := Parse("m.toml", []byte("[hosts.w]\ncommand = \"x\"\ntimeout = 90\nidle_timeout = \"1m30s\"\ninit_timeout = 0.5\n"))
	if err != nil {
		t.Fatal(err)
	}
	h := m.Hosts["w"]
	if h.Timeout.D() != 90*time.Second || h.IdleTimeout.D() != 90*time.Second || h.InitTimeout.D() != 500*time.Millisecond {
		t.Fatalf("durations: %v %v %v", h.Timeout.D(), h.IdleTimeout.D(), h.InitTimeout.D())
	}
}

func TestWorkingDirRelativeToManifest(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.toml")
	if err := os.WriteFile(path, []byte("[hosts.w]\ncommand = \"x\"\nworking_dir = \"sub\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Hosts["w"].WorkingDir; got != filepath.Join(dir, "sub") {
		t.Fatalf("working_dir = %q", got)
	}
}

func FuzzParse(f *testing.F) {
	for _, p := range []string{"testdata/architecture.toml", "testdata/concerto.toml"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("[[routes]]\nmatch = \"(\"\n[hosts.\"a b\"]\ncommand=1"))
	f.Fuzz(func(t *testing.T, src []byte) {
		m, err := Parse("fuzz.toml", src)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || len(e.Problems) == 0 {
				t.Fatalf("error is not a config.Error with problems: %v", err)
			}
			for _, p := range e.Problems {
				if p.Msg == "" || p.File != "fuzz.toml" {
					t.Fatalf("problem without a message or file: %+v", p)
				}
			}
			return
		}
		for name, h := range m.Hosts {
			if h.Command == "" || h.Pool < 1 || h.MaxLineBytes < 1024 || h.ApprovalDefaultJSON == nil {
				t.Fatalf("host %q passed validation without its defaults: %+v", name, h)
			}
		}
	})
}

func TestFreeFormAnswersAcceptAnyTable(t *testing.T) {
	m, err := Parse("m.toml", []byte(`[hosts.w]
command = "x"
question_default = { choice = "skip", nested = { ok = true } }
[supervisors.r]
strategy = "rule"
rules = [{ match = "retries", answer = { retries = 3, backoff = ["1s", "2s"] } }]
[supervisors.s]
strategy = "static"
answers = { tool_call = { rows = [1, 2] } }
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(m.Supervisors["r"].Rules[0].AnswerJSON); got != `{"backoff":["1s","2s"],"retries":3}` {
		t.Fatalf("rule answer = %s", got)
	}
	if _, err := Parse("m.toml", []byte("[supervisors.r]\nstrategy = \"rule\"\nrules = [{ match = \"x\", answer = 1, anwser = 2 }]\n")); err == nil || !strings.Contains(err.Error(), `unknown key "anwser"`) {
		t.Fatalf("a misspelt rule key must still be an error, got %v", err)
	}
}

func TestEveryProblemReported(t *testing.T) {
	_, err := Parse("m.toml", []byte(`[hosts.w]
command = "x"
timeout = "10x"
idle_timeout = "5y"
question_timeout = "0s"
init_timeout = 0
stop_grace = -1
[[nats.users]]
name = "a"
password_env = "P"
role = "viewer"
[[nats.users]]
name = "b"
password_env = "P"
role = "viewer"
bogus = 1
[tools.t]
command = "x"
timeout = 0
`))
	if err == nil {
		t.Fatal("a manifest with many problems loaded")
	}
	for _, want := range []string{
		`hosts.w.timeout (m.toml:3:1): "10x" is not a duration`,
		`hosts.w.idle_timeout (m.toml:4:1): "5y" is not a duration`,
		`hosts.w.question_timeout (m.toml:5:1): 0 would leave requests without a deadline; leave it out for the default 1m0s`,
		`hosts.w.init_timeout (m.toml:6:1): 0 would wait for init_ack forever`,
		`hosts.w.stop_grace (m.toml:7:1): -1 is negative`,
		`nats.users.1.bogus (m.toml:16:1): unknown key "bogus"; known keys here: name, password_env, nkey, role, supervisors, tools`,
		`tools.t.timeout (m.toml:19:1): 0 would let a tool call run forever`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("problems lack %q:\n%v", want, err)
		}
	}
}

func TestZeroMeansNone(t *testing.T) {
	m, err := Parse("m.toml", []byte("[hosts.w]\ncommand = \"x\"\ntimeout = 0\nidle_timeout = \"0s\"\nstop_grace = 0\n[hosts.d]\ncommand = \"x\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	w, d := m.Hosts["w"], m.Hosts["d"]
	if w.Timeout != 0 || w.IdleTimeout != 0 || w.StopGrace != 0 {
		t.Errorf("a written 0 is not none: %+v", w)
	}
	if d.StopGrace.D() != DefaultStopGrace || d.QuestionTimeout.D() != DefaultQuestionTimeout || d.InitTimeout.D() != DefaultInitTimeout {
		t.Errorf("left out is not the default: %+v", d)
	}
}

func TestNothingToDo(t *testing.T) {
	_, err := Parse("m.toml", []byte("[nats]\nlisten = \"127.0.0.1:4222\"\n"))
	if err == nil || !strings.Contains(err.Error(), "neither hosts nor supervisors") {
		t.Fatalf("an empty manifest: %v", err)
	}
}

func TestWarningsForThisMachine(t *testing.T) {
	m, err := Parse(filepath.Join(t.TempDir(), "m.toml"), []byte(`[hosts.a]
command = "no-such-agent-xyz"
[hosts.b]
command = "./bin/agent"
[hosts.c]
command = "sh"
working_dir = "/does/not/exist"
[hosts.d]
command = "sh"
sandbox_write = ["cache", "~/.cache/agentmux-test-none", "/"]
sandbox_read_deny = ["secrets"]
`))
	if err != nil {
		t.Fatal(err)
	}
	got := warnings(m, "")
	all := strings.Join(got, "\n")
	for _, want := range []string{
		`hosts.a.command (m.toml:2:1): "no-such-agent-xyz" is not on PATH here`,
		`hosts.b.command (m.toml:4:1): "./bin/agent" does not exist here`,
		`hosts.c.working_dir (m.toml:7:1): "/does/not/exist" is not a directory here`,
		`hosts.d.sandbox_write (m.toml:10:1): "` + filepath.Join(filepath.Dir(m.Path), "cache") + `" does not exist here; the program cannot start in its sandbox until it does`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}
	if len(got) != 5 {
		t.Errorf("%d warnings, want 5 (sh is on PATH, / exists):\n%s", len(got), all)
	}
	home, _ := os.UserHomeDir()
	d := m.Hosts["d"]
	if want := []string{filepath.Join(filepath.Dir(m.Path), "cache"), filepath.Join(home, ".cache/agentmux-test-none"), "/"}; !slices.Equal(d.SandboxWrite, want) {
		t.Errorf("sandbox_write = %q, want %q (from the manifest's folder, ~ the home)", d.SandboxWrite, want)
	}
	if want := filepath.Join(filepath.Dir(m.Path), "secrets"); len(d.SandboxReadDeny) != 1 || d.SandboxReadDeny[0] != want {
		t.Errorf("sandbox_read_deny = %q, want [%q]", d.SandboxReadDeny, want)
	}
}

// TestEmptyQuotedKeyIsLocated: an empty key ("" = 1, valid TOML) is reported at its
// place; the locator once looked for it forever (found by FuzzParse in CI).
func TestEmptyQuotedKeyIsLocated(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		_, err := Parse("m.toml", []byte("[hosts.w]\ncommand = \"x\"\n\"\" = 1\n"))
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Parse never returned")
	}
	if err == nil || !strings.Contains(err.Error(), "m.toml:3:1") {
		t.Fatalf("Parse = %v; want the empty key reported at m.toml:3:1", err)
	}
}

// TestUnknownKeyInManyTablesIsReportedOncePerTable: a typo repeated in 300 [[routes]]
// is 300 problems, each at its own line (it used to be 300 × 300, and took seconds).
func TestUnknownKeyInManyTablesIsReportedOncePerTable(t *testing.T) {
	const n = 300
	src := "[supervisors.s]\nstrategy = \"static\"\nanswers = { question = \"x\" }\n" + strings.Repeat("[[routes]]\nsupervisor = \"s\"\nbogus = 1\n", n)
	_, err := Parse("m.toml", []byte(src))
	var e *Error
	if !errors.As(err, &e) || len(e.Problems) != n {
		t.Fatalf("Parse = %d problems; want %d", len(e.Problems), n)
	}
	for i, p := range e.Problems {
		if want := 3 + 3*i + 3; p.Line != want || !strings.Contains(p.Msg, `unknown key "bogus"`) {
			t.Fatalf("problem %d = %+v; want unknown key \"bogus\" at line %d", i, p, want)
		}
	}
}

// [audit]: 90 days unless said; "0s" keeps everything; a negative size is refused; an
// unknown key names the known ones.
func TestAuditRetentionKeys(t *testing.T) {
	const sup = "[supervisors.s]\nstrategy = \"static\"\nanswers = { question = \"x\" }\n"
	m, err := Parse("agentmux.toml", []byte(sup))
	if err != nil || m.Audit.MaxAge.D() != DefaultAuditMaxAge || m.Audit.MaxBytes != 0 || !m.Audit.KeepEvents || m.Audit.EventsMaxAge.D() != DefaultEventsMaxAge {
		t.Fatalf("no [audit]: %+v %v; want 90 days of audit, 7 of events, and no size limit", m.Audit, err)
	}
	m, err = Parse("agentmux.toml", []byte(sup+"[audit]\nmax_age = \"0s\"\nmax_bytes = 10_000_000_000\n"))
	if err != nil || m.Audit.MaxAge != 0 || m.Audit.MaxBytes != 10_000_000_000 {
		t.Fatalf("[audit] max_age 0s: %+v %v", m.Audit, err)
	}
	for src, want := range map[string]string{
		"[audit]\nmax_bytes = -1\n":        "audit.max_bytes (agentmux.toml:5:1): -1 is negative",
		"[audit]\nmax_ages = \"1h\"\n":     `unknown key "max_ages"; known keys here: max_age, max_bytes, keep_events, events_max_age, events_max_bytes`,
		"[audit]\nevents_max_bytes = -2\n": "audit.events_max_bytes (agentmux.toml:5:1): -2 is negative",
	} {
		if _, err := Parse("agentmux.toml", []byte(sup+src)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want %q", src, err, want)
		}
	}
}

// TestConcertoKeysNotActedOnAreSaid: a connection's retry, which Concerto has and
// agentmux does not act on, is accepted with a warning; its rate_limit is read.
func TestConcertoKeysNotActedOnAreSaid(t *testing.T) {
	m, err := Parse(filepath.Join(t.TempDir(), "m.toml"), []byte(`[connections.openai]
provider = "openai"
organization = "org-1"
retry = { max_attempts = 3 }
rate_limit = { requests_per_minute = 60, concurrency = 4 }
[supervisors.s]
strategy = "static"
answers = { question = "yes" }
`))
	if err != nil {
		t.Fatal(err)
	}
	got := warnings(m, "")
	all := strings.Join(got, "\n")
	if len(got) != 1 || !strings.Contains(all, "connections.openai.retry (m.toml:4:1): accepted as Concerto has it, and not used") {
		t.Errorf("warnings:\n%s\nwant one, for retry", all)
	}
	c := m.Connections["openai"]
	if c.Organization != "org-1" || c.RateLimit == nil || *c.RateLimit != (RateLimit{RequestsPerMinute: 60, Burst: 6, Concurrency: 4}) {
		t.Errorf("connection %+v, rate_limit %+v", c, c.RateLimit)
	}
	for src, want := range map[string]string{
		"rate_limit = { concurrency = -1 }":         "connections.x.rate_limit.concurrency (agentmux.toml:3:16): -1 is negative",
		"rate_limit = { requests_per_second = 10 }": `unknown key "requests_per_second"`,
	} {
		if _, err := Parse("agentmux.toml", []byte("[connections.x]\nprovider = \"openai\"\n"+src+"\n[supervisors.s]\nstrategy = \"static\"\n")); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want %q", src, err, want)
		}
	}
}

// TestWarnsOfAMissingScript: an interpreter's script that is not where the program
// starts is warned of, with a hint for a build's output; one that is there is not.
func TestWarnsOfAMissingScript(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "there.py"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := Parse(filepath.Join(dir, "m.toml"), []byte(`[hosts.ts]
command = "node"
args = ["--enable-source-maps", "dist/agent.js"]
[hosts.py]
command = "python3"
args = ["there.py"]
working_dir = "."
[hosts.gone]
command = "python3"
args = ["-u", "gone.py"]
`))
	if err != nil {
		t.Fatal(err)
	}
	got := warnings(m, ".args ")
	all := strings.Join(got, "\n")
	if len(got) != 2 || !strings.Contains(all, `hosts.ts.args (m.toml:3:1): args[1] "dist/agent.js" does not exist here: node would stop at its start (a build's output: build it first, e.g. npm run build)`) ||
		!strings.Contains(all, `hosts.gone.args (m.toml:10:1): args[1] "gone.py" does not exist here: python3 would stop at its start`) {
		t.Errorf("warnings:\n%s", all)
	}
}

// warnings are the messages of m's warnings that hold part ("": every one).
func warnings(m *Manifest, part string) []string {
	var out []string
	for _, w := range m.Warnings {
		if strings.Contains(w.Error(), part) {
			out = append(out, w.Error())
		}
	}
	return out
}

// TestHostModel: a host's model names a connection the gateway speaks; a host that
// passes a provider's key to its agents while connections exist is warned of.
func TestHostModel(t *testing.T) {
	const conns = "[connections.claude]\nprovider = \"anthropic\"\napi_key_env = \"NODE_ANTHROPIC_KEY\"\n"
	m, err := Parse("agentmux.toml", []byte(conns+`[hosts.a]
command = "claude"
dialect = "claude-code"
model = { connection = "claude" }
[hosts.b]
command = "claude"
dialect = "claude-code"
inherit_env = ["NODE_ANTHROPIC_KEY"]
`))
	if err != nil {
		t.Fatal(err)
	}
	if m.Hosts["a"].Model == nil || m.Hosts["a"].Model.Connection != "claude" {
		t.Fatalf("hosts.a.model = %+v", m.Hosts["a"].Model)
	}
	if got := strings.Join(warnings(m, ""), "\n"); !strings.Contains(got, "hosts.b") || !strings.Contains(got, "passes NODE_ANTHROPIC_KEY to its agents") || strings.Contains(got, "hosts.a ") {
		t.Errorf("warnings:\n%s\nwant one, of hosts.b passing the key", got)
	}
	for src, want := range map[string]string{
		"[hosts.x]\ncommand = \"c\"\nmodel = { connection = \"nope\" }\n":                                                                          `hosts.x.model.connection (agentmux.toml:6:11): no connection "nope"`,
		"[hosts.x]\ncommand = \"c\"\nmodel = {}\n":                                                                                                 "model needs a connection",
		"[hosts.x]\ncommand = \"c\"\nmodel = { conection = \"claude\" }\n":                                                                         `unknown key "conection"`,
		"[hosts.x]\ncommand = \"codex\"\ndialect = \"codex\"\nmodel = { connection = \"claude\" }\n":                                               "Codex speaks OpenAI's Responses API",
		"[connections.oai]\nprovider = \"openai\"\n[hosts.x]\ncommand = \"claude\"\ndialect = \"claude-code\"\nmodel = { connection = \"oai\" }\n": `Claude Code speaks Anthropic's Messages API, and connection "oai" is "openai"`,
	} {
		if _, err := Parse("agentmux.toml", []byte(conns+src)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want %q", src, err, want)
		}
	}
}

// TestGatewayRecord: [gateway] record is none unless written, and one of three.
func TestGatewayRecord(t *testing.T) {
	const host = "[hosts.x]\ncommand = \"c\"\n"
	m, err := Parse("agentmux.toml", []byte(host))
	if err != nil || m.Gateway.Record != RecordNone {
		t.Fatalf("default: %+v %v; want none", m.Gateway, err)
	}
	if m, err := Parse("agentmux.toml", []byte("[gateway]\nrecord = \"full\"\n"+host)); err != nil || m.Gateway.Record != RecordFull {
		t.Fatalf("full: %+v %v", m, err)
	}
	if _, err := Parse("agentmux.toml", []byte("[gateway]\nrecord = \"bodies\"\n"+host)); err == nil || !strings.Contains(err.Error(), `gateway.record (agentmux.toml:2:1): unknown "bodies"; use "none", "metadata"`) {
		t.Errorf("a record of bodies: %v", err)
	}
}
