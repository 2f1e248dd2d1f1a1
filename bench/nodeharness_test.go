package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// nodeModules returns the Node.js harness's node_modules, installing nats.js from its
// package-lock.json when missing (.ci/run installs it first).
func nodeModules(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("nodeharness", "node_modules")
	if _, err := os.Stat(filepath.Join(dir, "@nats-io", "transport-node")); err == nil {
		return dir
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "npm", "ci", "--prefix", "nodeharness", "--no-audit", "--no-fund").CombinedOutput()
	if err != nil {
		t.Fatalf("install the Node.js harness's nats.js (npm ci --prefix bench/nodeharness): %v\n%s", err, out)
	}
	return dir
}
