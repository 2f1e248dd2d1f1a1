package examples

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
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
	// approval mentions auth too, matches no security rule, and falls through to the
	// host's approval_default, "no".
	if out["algorithm"] != "Use RS256 with rotating keys" || out["algorithm_outcome"] != "answered" || out["approved"] != false {
		t.Fatalf("result = %v", out)
	}
	if out["partial_output"] != "Model opus. " {
		t.Fatalf("init params did not reach the worker: %v", out)
	}
}

func TestTypeScriptWorker(t *testing.T) {
	if _, err := os.Stat(filepath.Join("typescript", "dist", "worker.js")); err != nil {
		t.Fatalf("the TypeScript worker is not built: run `npm install && npm run build` in examples/typescript (.ci/run does): %v", err)
	}
	out := runExample(t, "examples/typescript.toml", "tsworker", "add tests")
	if out["framework"] != "vitest" || out["approved"] != true || out["model"] != "sonnet" {
		t.Fatalf("result = %v", out)
	}
}
