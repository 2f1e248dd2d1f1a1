package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nuid"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/node"
	"github.com/agentmux/agentmux/sim"
)

// TestMain doubles as the process agent when AGENTMUX_BENCH_AGENT is set, and as a
// fleet node when AGENTMUX_BENCH_NODE is.
func TestMain(m *testing.M) {
	if os.Getenv("AGENTMUX_BENCH_NODE") != "" {
		os.Exit(RunNodeProcess(os.Args[1:], os.Stdout, os.Stderr))
	}
	if os.Getenv("AGENTMUX_BENCH_AGENT") != "" {
		if err := sim.Run(os.Stdin, os.Stdout, sim.Options{}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(proctest.ExitCode(m.Run()))
}

func small(agentKind string) Config {
	c := Defaults()
	c.Sessions, c.Progress, c.Rate, c.Think, c.QuestionTimeout = 20, 50, 200, 10*time.Millisecond, time.Second
	c.Agent = agentKind
	c.AgentCommand = []string{os.Args[0]}
	c.AgentEnv = map[string]string{"AGENTMUX_BENCH_AGENT": "1"}
	c.Timeout = 2 * time.Minute
	return c
}

func noProgress(string, int, int) {}

// checkSystem asserts what a user reads off a system's row.
func checkSystem(t *testing.T, s *System, c Config, withAgents bool) {
	t.Helper()
	if s.Sessions != c.Sessions || s.Failed != 0 || s.Missing != 0 {
		t.Errorf("%s: %d sessions, %d failed, %d missing: %v", s.Name, s.Sessions, s.Failed, s.Missing, s.Errors)
	}
	perSession := int64(c.Questions + c.Approvals)
	if s.Questions.Count+s.Approvals.Count != perSession*int64(c.Sessions) {
		t.Errorf("%s: %d question and %d approval latencies; want %d in all", s.Name, s.Questions.Count, s.Approvals.Count, perSession*int64(c.Sessions))
	}
	if s.Questions.P50 <= 0 || s.Questions.P50 > s.Questions.P99 || s.Questions.P99 > s.Questions.Max {
		t.Errorf("%s: percentiles out of order: %+v", s.Name, s.Questions)
	}
	if withAgents {
		if s.Progress != int64(c.Progress*c.Sessions) || s.ProgressPS <= 0 {
			t.Errorf("%s: %d progress lines at %.0f/s", s.Name, s.Progress, s.ProgressPS)
		}
		if s.DefaultLate.Count != int64(c.Unrouted*c.Sessions) || s.Outcomes["timed_out"] != c.Unrouted*c.Sessions {
			t.Errorf("%s: %d defaults measured, outcomes %v", s.Name, s.DefaultLate.Count, s.Outcomes)
		}
	}
}

func TestRunWithBaselinesAndProbes(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("the Node.js harness needs node on PATH: %v", err)
	}
	c := small(AgentProcess)
	c.Baselines, c.NodeBinary, c.Probes, c.ProbeSessions = true, node, true, 50
	c.NodeModules = nodeModules(t)
	rep, err := Run(context.Background(), c, slog.New(slog.DiscardHandler), noProgress)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, s := range rep.Systems {
		names = append(names, s.Name)
		checkSystem(t, s, c, s.Name != "B2")
	}
	if strings.Join(names, ",") != "agentmux,B0,B1,B1a,B2,node" {
		t.Fatalf("systems %v", names)
	}
	// B1a's every answer is durable: the stream holds each session's start and end,
	// each request's record, and an unrouted question's record of its own.
	if b1a, want := rep.system("B1a"), int64(c.Sessions*(2+c.Questions+c.Approvals+2*c.Unrouted)); b1a.Durable != want {
		t.Errorf("B1a: the audit holds %d records; want %d", b1a.Durable, want)
	}
	figures := map[string]bool{}
	for _, r := range rep.Ratios {
		figures[r.Figure] = true
	}
	if w := rep.Wire; w == nil || w.Request.Count != wireRounds || w.Publish.Count != wireRounds || w.RequestPC <= 0 || w.PublishPC <= 0 {
		t.Errorf("the wire's floor: %+v", rep.Wire)
	}
	for _, want := range []string{"question rtt p50 / B1a", "requests per CPU-second / B1a", "question rtt p50 / wire request p50", "question rtt p50 / B1", "question rtt p50 / B2", "requests per harness CPU-second / Node.js", "default answer lateness p99 (ms)",
		"runtime memory per live session (KiB)", "goroutines per live session", "NATS subscriptions per live session", "idle CPU of the idle sessions (% of a core)", "session start rate / raw os/exec"} {
		if !figures[want] {
			t.Errorf("no ratio %q", want)
		}
	}
	p := rep.Probes
	if p.Sessions != 50 || p.GoroutinesPerSession <= 0 || p.BytesPerSession <= 0 || p.StartPerSecond <= 0 || p.RawExecPerSecond <= 0 {
		t.Errorf("probes %+v", p)
	}
	if p.SubscriptionsPerSession > 0.01 {
		t.Errorf("%.2f NATS subscriptions per session; the runtime must not subscribe per session", p.SubscriptionsPerSession)
	}

	var table bytes.Buffer
	WriteTable(&table, rep)
	for _, want := range []string{"agentmux", "B1", "B1a", "node", "target", "probes (50 idle process sessions)", "wire (5000 round trips"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	var img bytes.Buffer
	if err := WritePNG(&img, rep); err != nil {
		t.Fatal(err)
	}
	if cfg, err := png.DecodeConfig(&img); err != nil || cfg.Width != plotW {
		t.Fatalf("png: %v %+v", err, cfg)
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Fatal(err)
	}
}

func TestRunInProc(t *testing.T) {
	c := small(AgentInProc)
	rep, err := Run(context.Background(), c, slog.New(slog.DiscardHandler), noProgress)
	if err != nil {
		t.Fatal(err)
	}
	checkSystem(t, rep.Systems[0], c, true)
}

// TestRunOnAFleet: --nodes 3 runs the same scenario on three nodes in one NATS cluster,
// supervisors on other nodes than the agents, and reports its round trip next to the
// single node's.
func TestRunOnAFleet(t *testing.T) {
	c := small(AgentInProc)
	c.Nodes = 3
	rep, err := Run(context.Background(), c, slog.New(slog.DiscardHandler), noProgress)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Systems) != 2 || rep.Systems[1].Name != "agentmux-3nodes" || rep.Config.Nodes != 3 {
		t.Fatalf("systems %v", rep.Systems)
	}
	checkSystem(t, rep.Systems[1], c, true)
	figures := map[string]float64{}
	for _, r := range rep.Ratios {
		figures[r.Figure] = r.Value
	}
	if figures["cross-node question rtt p50 / single node"] <= 0 || figures["cross-node question rtt p99 / single node"] <= 0 {
		t.Fatalf("ratios %+v lack the cross-node round trip", rep.Ratios)
	}
	var table strings.Builder
	WriteTable(&table, rep)
	if !strings.Contains(table.String(), "agentmux-3nodes") || !strings.Contains(table.String(), "cross-node question rtt p50 / single node") {
		t.Fatalf("table:\n%s", table.String())
	}
}

func TestValidateSaysWhichFlag(t *testing.T) {
	c := Defaults()
	c.Agent = "thread"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `agent "thread": use process or inproc`) {
		t.Fatalf("err = %v", err)
	}
}

func TestMediansAndTargets(t *testing.T) {
	runs := []*Report{
		{Ratios: []Ratio{{Figure: "a", Value: 1.0, Target: "≤ 1.3"}, {Figure: "b", Value: 9e5, Target: "≥ 1,000,000"}}},
		{Ratios: []Ratio{{Figure: "a", Value: 2.0, Target: "≤ 1.3"}, {Figure: "b", Value: 2e6, Target: "≥ 1,000,000"}}},
		{Ratios: []Ratio{{Figure: "a", Value: 1.2, Target: "≤ 1.3"}, {Figure: "b", Value: 1.5e6, Target: "≥ 1,000,000"}}},
	}
	m := medians(runs)
	if m[0].Value != 1.2 || !m[0].Met || m[1].Value != 1.5e6 || !m[1].Met {
		t.Fatalf("medians %+v", m)
	}
	if meets(0.5, "0") || !meets(0, "0") || meets(2, "≤ 1.5") {
		t.Fatal("meets misreads a target")
	}
}

// TestDrivesARemoteNodesSupervisors runs the load against supervisors on another node,
// over that node's NATS, as --nats and --remote-supervisors do, with the identity the
// CLI's variables give.
func TestDrivesARemoteNodesSupervisors(t *testing.T) {
	password := nuid.Next()
	t.Setenv("T_LOADGEN_PASSWORD", password)
	t.Setenv(config.EnvNATSUser, "driver")
	t.Setenv(config.EnvNATSPassword, password)
	m, err := config.Parse("remote.toml", []byte(`[nats]
listen = "127.0.0.1:0"
[[nats.users]]
name = "driver"
password_env = "T_LOADGEN_PASSWORD"
role = "node"
[supervisors.fast]
strategy = "static"
answers = { question = "unit", approval = "yes" }
`))
	if err != nil {
		t.Fatal(err)
	}
	remote, err := node.Start(context.Background(), node.Options{Manifest: m, Name: "remote", Log: slog.New(slog.DiscardHandler), Ephemeral: true, MetricsAddr: "-"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = remote.Stop(context.Background()) }()

	c := small(AgentInProc)
	c.NATSURL, c.RemoteSupervisors = remote.Bus.ClientURL(), true
	rep, err := Run(context.Background(), c, slog.New(slog.DiscardHandler), noProgress)
	if err != nil {
		t.Fatal(err)
	}
	checkSystem(t, rep.Systems[0], c, true)
	if rep.Config.NATS != remote.Bus.ClientURL() {
		t.Errorf("report names NATS %q", rep.Config.NATS)
	}
	decided := counterValue(remote.Metrics.Decisions.WithLabelValues("fast", "decided"))
	if want := float64(c.Sessions * (c.Questions + c.Approvals)); decided != want {
		t.Fatalf("the remote supervisor decided %v requests; want %v", decided, want)
	}
}

// TestNodeHarnessWithoutNatsJS: a baseline run whose Node.js harness lacks its modules
// stops before running anything, saying how to install them.
func TestNodeHarnessWithoutNatsJS(t *testing.T) {
	c := small(AgentProcess)
	c.Baselines, c.NodeModules = true, t.TempDir()
	_, err := Run(context.Background(), c, slog.New(slog.DiscardHandler), noProgress)
	if err == nil || !strings.Contains(err.Error(), "npm ci --prefix bench/nodeharness") {
		t.Fatalf("Run = %v; want the install command", err)
	}
}

// TestRunReplicated: --replicated runs the single node's scenario again on a cluster of
// three servers, the audit at three replicas, and reports it beside one replica.
func TestRunReplicated(t *testing.T) {
	c := small(AgentInProc)
	c.Replicated = true
	rep, err := Run(context.Background(), c, slog.New(slog.DiscardHandler), noProgress)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Systems) != 2 || rep.Systems[1].Name != "agentmux-r3" {
		t.Fatalf("systems %v", rep.Systems)
	}
	checkSystem(t, rep.Systems[1], c, true)
	if r := rep.Systems[1].AuditReplicas; r != 3 {
		t.Errorf("the replicated run's audit has %d replicas; want 3", r)
	}
	figures := map[string]bool{}
	for _, r := range rep.Ratios {
		figures[r.Figure] = true
	}
	if !figures["three replicas: question rtt p50 / one replica"] || !figures["three replicas: requests per CPU-second / one replica"] {
		t.Errorf("ratios %+v", rep.Ratios)
	}
}
