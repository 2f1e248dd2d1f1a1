package bench

import (
	"bytes"
	"context"
	"image/png"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"
)

// TestFleetCurveOnNodeProcesses: the scaling curve runs every node as a process of its
// own, the tasks spread over the agent nodes, and each shape reports its sessions,
// latencies and each role's CPU; the table and the plot are written.
func TestFleetCurveOnNodeProcesses(t *testing.T) {
	c := Defaults()
	c.Sessions, c.Rate, c.Progress, c.Questions, c.Think = 40, 0, 5, 2, 10*time.Millisecond
	c.NodeCommand, c.AgentEnv = []string{os.Args[0]}, map[string]string{"AGENTMUX_BENCH_NODE": "1"}
	c.Timeout = 2 * time.Minute
	shapes, err := ParseShapes("1x1,1x2,2x1")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := RunFleetCurve(context.Background(), c, shapes, slog.New(slog.DiscardHandler), noProgress)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Points) != 3 {
		t.Fatalf("%d points; want 3", len(rep.Points))
	}
	for _, p := range rep.Points {
		s := p.System
		if s.Sessions != 40 || s.Failed != 0 || s.Missing != 0 || s.Requests != 40*4 || s.Questions.P99 <= 0 {
			t.Errorf("%s: %d sessions, %d failed, %d missing, %d requests, p99 %d µs", p.Shape, s.Sessions, s.Failed, s.Missing, s.Requests, s.Questions.P99)
		}
		if p.AgentCPU <= 0 || p.SupervisorCPU <= 0 || p.ServerCPU <= 0 {
			t.Errorf("%s: CPU agents %v, supervisors %v, server %v; want each measured", p.Shape, p.AgentCPU, p.SupervisorCPU, p.ServerCPU)
		}
		// 40 sessions at once, and each agent node has room for 40/agents + 8: with two
		// agent nodes, both run some.
		if len(p.Sessions) != p.Agents {
			t.Errorf("%s: sessions by node %v; want every one of its %d agent nodes to run some", p.Shape, p.Sessions, p.Agents)
		}
	}
	var table bytes.Buffer
	WriteFleetTable(&table, rep)
	if lines := strings.Split(strings.TrimSpace(table.String()), "\n"); len(lines) != 6 || !strings.Contains(lines[2], "agent nodes") || !strings.HasPrefix(strings.TrimSpace(lines[5]), "2 ") {
		t.Errorf("table:\n%s", table.String())
	}
	var img bytes.Buffer
	if err := WriteFleetPNG(&img, rep); err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(&img); err != nil {
		t.Fatalf("plot: %v", err)
	}
}

func TestParseShapes(t *testing.T) {
	if got, err := ParseShapes("1x1, 4x2"); err != nil || len(got) != 2 || got[1] != (Shape{4, 2}) {
		t.Fatalf("ParseShapes = %v, %v", got, err)
	}
	for _, bad := range []string{"", "2", "0x1", "ax1", "1x"} {
		if _, err := ParseShapes(bad); err == nil || !strings.Contains(err.Error(), "<agent nodes>x<supervisor nodes>") {
			t.Errorf("ParseShapes(%q) = %v", bad, err)
		}
	}
}
