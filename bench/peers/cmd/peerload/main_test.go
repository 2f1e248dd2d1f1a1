package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/bench"
	"github.com/agentmux/agentmux/bench/peers"
)

// peerload builds this command, as loadgen --peers does.
func peerload(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "peerload")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestLoadgenRunsAPeer runs loadgen's scenario with Restate as a peer through the real
// peerload: the report holds Restate beside agentmux with its progress passed on, its
// latencies in full (they plot), and the targets against it.
func TestLoadgenRunsAPeer(t *testing.T) {
	cache, err := peers.DefaultCache()
	if err != nil {
		t.Fatal(err)
	}
	c := bench.Defaults()
	c.Sessions, c.Rate, c.Progress, c.ProgressRate, c.Questions = 10, 20, 5, 100, 2
	c.Timeout = 3 * time.Minute
	c.Peers = []string{bench.PeerRestate}
	c.PeerCommand = []string{peerload(t), "--cache", cache, "--restate", filepath.Join("..", "..", "restate")}
	seen := map[string]int{}
	rep, err := bench.Run(context.Background(), c, slog.New(slog.NewTextHandler(io.Discard, nil)), func(system string, done, _ int) { seen[system] = max(seen[system], done) })
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range rep.Systems {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "agentmux,Restate" {
		t.Fatalf("systems %v, want agentmux and Restate", names)
	}
	r := rep.Systems[1]
	if r.Durable != int64(c.Sessions*(c.Questions+c.Approvals+c.Unrouted)) || r.ServersCPU <= 0 {
		t.Errorf("Restate: %d durable answers, servers' CPU %.2f s", r.Durable, r.ServersCPU)
	}
	if seen["Restate"] != c.Sessions || seen["warm-up Restate"] == 0 {
		t.Errorf("progress passed on: %v, want Restate's %d sessions and its warm-up", seen, c.Sessions)
	}
	var figures []string
	for _, x := range rep.Ratios {
		figures = append(figures, x.Figure)
	}
	for _, want := range []string{"requests per CPU-second / Restate", "question rtt p50 / Restate"} {
		if !strings.Contains(strings.Join(figures, "\n"), want) {
			t.Errorf("ratios %v, want %q", figures, want)
		}
	}
	var png bytes.Buffer
	if err := bench.WritePNG(&png, rep); err != nil || png.Len() == 0 {
		t.Fatalf("plot: %v", err)
	}
	var table bytes.Buffer
	bench.WriteTable(&table, rep)
	if !strings.Contains(table.String(), "Restate") || !strings.Contains(table.String(), "peak RSS MiB") {
		t.Errorf("table:\n%s", table.String())
	}
}

// TestPrepare finds every peer's programs, as CI runs it before the tests, and says
// where they are.
func TestPrepare(t *testing.T) {
	cache, err := peers.DefaultCache()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(peerload(t), "--prepare", "--cache", cache, "--restate", filepath.Join("..", "..", "restate")).Output()
	if err != nil {
		t.Fatalf("peerload --prepare: %v", err)
	}
	for _, want := range []string{"temporal", "restate"} {
		_, rest, ok := strings.Cut(string(out), want+": ")
		path, _, _ := strings.Cut(rest, "\n")
		if !ok {
			t.Errorf("peerload --prepare said %q, nothing of %s", out, want)
		} else if _, err := os.Stat(path); err != nil {
			t.Errorf("%s is at %s, it says: %v", want, path, err)
		}
	}
}

// TestUnknownPeer: peerload names the peers there are.
func TestUnknownPeer(t *testing.T) {
	cmd := exec.Command(peerload(t), "--peer", "kafka")
	cmd.Stdin = strings.NewReader(`{"Sessions":1,"Agent":"inproc"}`)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "use temporal or restate") {
		t.Fatalf("peerload --peer kafka: %v\n%s", err, out)
	}
	cmd = exec.Command(peerload(t), "--peer", "restate")
	cmd.Stdin = strings.NewReader("not json")
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "the scenario on stdin") {
		t.Fatalf("peerload with a bad scenario: %v\n%s", err, out)
	}
}
