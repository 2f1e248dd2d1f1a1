package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/bench"
	"github.com/agentmux/agentmux/internal/proctest"
)

func TestShortRunWritesTheReports(t *testing.T) {
	dir := t.TempDir()
	jsonPath, pngPath := filepath.Join(dir, "report.json"), filepath.Join(dir, "plot.png")
	var stdout, stderr bytes.Buffer
	code := run([]string{"--sessions", "10", "--progress", "20", "--questions", "2", "--think", "5ms", "--question-timeout", "200ms",
		"--runs", "2", "--json", jsonPath, "--png", pngPath}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	var runs struct {
		Runs []struct {
			Systems []struct {
				Name     string
				Sessions int
			}
		}
		Medians []struct{ Figure string }
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &runs); err != nil || len(runs.Runs) != 2 || runs.Runs[0].Systems[0].Name != "agentmux" || runs.Runs[0].Systems[0].Sessions != 10 {
		t.Fatalf("report %s: %v", b, err)
	}
	if st, err := os.Stat(pngPath); err != nil || st.Size() == 0 {
		t.Fatalf("plot: %v", err)
	}
	for _, want := range []string{"agentmux", "medians of 2 runs", "plot: " + pngPath} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if strings.Contains(stderr.String(), "\r") {
		t.Error("a progress bar was drawn on something that is not a terminal")
	}
}

func TestBadFlagsExit2(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--agent", "thread"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "use process or inproc") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

// TestMain doubles as loadgen's own node and agent processes, which its runs start
// from its own binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && (os.Args[1] == "node" || os.Args[1] == "agent" || os.Args[1] == "one") {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(proctest.ExitCode(m.Run()))
}

func TestFleetCurveWritesTheReports(t *testing.T) {
	dir := t.TempDir()
	jsonPath, pngPath := filepath.Join(dir, "fleet.json"), filepath.Join(dir, "fleet.png")
	var stdout, stderr bytes.Buffer
	code := run([]string{"fleet", "--shapes", "1x1,2x1", "--sessions", "20", "--rate", "0", "--progress", "5", "--questions", "2",
		"--think", "5ms", "--json", jsonPath, "--png", pngPath}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	var rep struct {
		Points []struct {
			AgentNodes int `json:"agent_nodes"`
			System     struct {
				Sessions int
				Requests int
			}
		}
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil || len(rep.Points) != 2 || rep.Points[1].AgentNodes != 2 || rep.Points[1].System.Requests != 20*4 {
		t.Fatalf("report %s: %v", b, err)
	}
	if st, err := os.Stat(pngPath); err != nil || st.Size() == 0 {
		t.Fatalf("plot: %v", err)
	}
	if !strings.Contains(stderr.String(), "supervisor nodes") || !strings.Contains(stderr.String(), "plot: "+pngPath) {
		t.Errorf("stderr:\n%s", stderr.String())
	}
	code = run([]string{"fleet", "--shapes", "2"}, &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "want <agent nodes>x<supervisor nodes>") {
		t.Fatalf("a bad shape: exit %d\n%s", code, stderr.String())
	}
}

// TestHooksPath posts Claude Code PermissionRequest hooks to the console's API in
// open loop: every one is allowed by the source's rule, and the report says so, with
// their round trips.
func TestHooksPath(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"hooks", "--rate", "50", "--hooks", "40", "--sessions", "4"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	var rep struct {
		Hooks, Allowed, Failed int
		Latency                struct {
			Count int64
			P50   int64 `json:"p50_us"`
		} `json:"round_trip"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("report %s: %v", stdout.Bytes(), err)
	}
	if rep.Hooks != 40 || rep.Allowed != 40 || rep.Failed != 0 || rep.Latency.Count != 40 || rep.Latency.P50 <= 0 {
		t.Fatalf("report %s", stdout.Bytes())
	}
	if !strings.Contains(stderr.String(), "40 allowed, 0 failed") {
		t.Errorf("stderr: %s", stderr.String())
	}
	if code := run([]string{"hooks", "--rate", "0"}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "must be at least 1") {
		t.Errorf("--rate 0: exit %d: %s", code, stderr.String())
	}
}

// TestSideBySide runs agentmux and B1a at once, each in a process of its own, and
// reports each pair's requests per CPU-second; every session of both is counted.
func TestSideBySide(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"side-by-side", "--pairs", "2", "--sessions", "20", "--rate", "0", "--progress", "5", "--questions", "2",
		"--think", "5ms", "--question-timeout", "200ms"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	var rep struct {
		Pairs []struct {
			Agentmux, B1a struct {
				Name     string
				Sessions int
				Requests int
				PerCPU   float64 `json:"requests_per_cpu_s"`
			}
		}
		Median struct {
			Figure string
			Value  float64
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("report %s: %v", stdout.Bytes(), err)
	}
	if len(rep.Pairs) != 2 || rep.Median.Figure != "requests per CPU-second / B1a" || rep.Median.Value <= 0 {
		t.Fatalf("report %s", stdout.Bytes())
	}
	for _, p := range rep.Pairs {
		// 2 questions, 1 approval and 1 unrouted question a session.
		if p.Agentmux.Name != "agentmux" || p.B1a.Name != "B1a" || p.Agentmux.Sessions != 20 || p.B1a.Sessions != 20 ||
			p.Agentmux.Requests != 80 || p.B1a.Requests != 80 || p.Agentmux.PerCPU <= 0 || p.B1a.PerCPU <= 0 {
			t.Fatalf("a pair: %+v", p)
		}
	}
	if !strings.Contains(stderr.String(), "agentmux and B1a run at the same time: median") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
	if code := run([]string{"side-by-side", "--pairs", "0"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "--pairs must be at least 1") {
		t.Errorf("--pairs 0: exit %d: %s", code, stderr.String())
	}
	scenario, err := json.Marshal(bench.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if code := one([]string{"B9"}, bytes.NewReader(append(scenario, '\n')), &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), `no system "B9" to run alone`) {
		t.Errorf("one B9: exit %d: %s", code, stderr.String())
	}
	if code := one([]string{"B1a"}, strings.NewReader("{\n"), &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "the scenario on stdin") {
		t.Errorf("one with a broken scenario: exit %d: %s", code, stderr.String())
	}
}
