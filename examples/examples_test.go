package examples

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/node"
)

// runExample runs one session of a manifest from the repository root, as the README does.
func runExample(t *testing.T, manifest, host, prompt string) map[string]any {
	t.Helper()
	t.Chdir("..")
	m, err := config.Load(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 { // as in CI: a node run as root runs agents as root only when told
		for _, h := range m.Hosts {
			h.User = "root"
		}
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	n, err := node.Start(context.Background(), node.Options{Manifest: m, Log: log, Ephemeral: true, MetricsAddr: "-", Name: "examples"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := n.Run(ctx, host, "", prompt)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK {
		t.Fatalf("session failed: %s", res.Error)
	}
	var out map[string]any
	if err := json.Unmarshal(res.Payload, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPythonWorker(t *testing.T) {
	out := runExample(t, "examples/worker.toml", "worker", "add login")
	// The question mentions "auth token": the security supervisor's rule answers it. The
	// approval ("write src/auth.py") mentions auth too, and a security rule approves it.
	if out["algorithm"] != "Use RS256 with rotating keys" || out["algorithm_outcome"] != "answered" || out["approved"] != true {
		t.Fatalf("result = %v", out)
	}
	if out["partial_output"] != "Model opus. " {
		t.Fatalf("init params did not reach the worker: %v", out)
	}
}

// buildTypeScript compiles the TypeScript worker with the real tsc from npm when
// dist/worker.js is missing or older than worker.ts.
func buildTypeScript(t *testing.T) {
	t.Helper()
	src, err := os.Stat(filepath.Join("typescript", "worker.ts"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := os.Stat(filepath.Join("typescript", "dist", "worker.js")); err == nil && !out.ModTime().Before(src.ModTime()) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, args := range [][]string{{"install", "--no-audit", "--no-fund"}, {"run", "build"}} {
		cmd := exec.CommandContext(ctx, "npm", args...)
		cmd.Dir = "typescript"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build the TypeScript worker: npm %v: %v\n%s", args, err, out)
		}
	}
}

func TestTypeScriptWorker(t *testing.T) {
	buildTypeScript(t)
	out := runExample(t, "examples/typescript.toml", "tsworker", "add tests")
	if out["framework"] != "vitest" || out["approved"] != true || out["model"] != "sonnet" {
		t.Fatalf("result = %v", out)
	}
}

func TestClaudeCodeManifestValidates(t *testing.T) {
	m, err := config.Load("claude-code.toml")
	if err != nil {
		t.Fatal(err)
	}
	if h := m.Hosts["claude"]; h.Dialect != "claude-code" || len(m.Routes) != 3 {
		t.Fatalf("host %+v routes %d", h, len(m.Routes))
	}
}

func TestPipelineManifestValidates(t *testing.T) {
	m, err := config.Load("pipeline.toml")
	if err != nil {
		t.Fatal(err)
	}
	p := m.Pipelines["build_and_test"]
	if p == nil || len(p.Stages) != 2 || p.Stage("test").Result == nil || p.Stage("test").Result.Retries != 2 {
		t.Fatalf("pipeline %+v", p)
	}
	if m.Hosts["coder"].Dialect != "claude-code" {
		t.Fatalf("coder %+v", m.Hosts["coder"])
	}
}
