package peers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// TemporalCLI is the module and version of the temporal CLI built for the Temporal
// peer when none is found (its dev server is Temporal's server 1.29).
const TemporalCLI = "github.com/temporalio/cli/cmd/temporal@v1.5.1"

// Tools finds the peers' programs, or builds them once into Cache.
type Tools struct {
	Cache   string // where built programs are kept: $XDG_CACHE_HOME/agentmux/peers by default
	Restate string // the directory of service.mjs and its package.json (bench/peers/restate)
	Node    string // Node.js
	Log     *slog.Logger
}

// DefaultCache is the user's cache directory's agentmux/peers.
func DefaultCache() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("peers: no cache directory (%w): pass one", err)
	}
	return filepath.Join(dir, "agentmux", "peers"), nil
}

// Temporal is the temporal CLI: built into the cache before, or on PATH, or built now
// with `go install` (a few minutes, once).
func (t Tools) Temporal(ctx context.Context) (string, error) {
	_, version, _ := strings.Cut(TemporalCLI, "@")
	bin := filepath.Join(t.Cache, "temporal-"+version)
	cached := filepath.Join(bin, "temporal")
	if _, err := os.Stat(cached); err == nil {
		return cached, nil
	}
	if p, err := exec.LookPath("temporal"); err == nil {
		t.Log.Info("peers: the temporal CLI on PATH", "path", p)
		return p, nil
	}
	t.Log.Info("peers: building the temporal CLI once; this takes minutes", "module", TemporalCLI, "into", bin)
	cmd := exec.CommandContext(ctx, "go", "install", TemporalCLI)
	cmd.Dir = os.TempDir() // outside any module: go install takes the version asked for
	cmd.Env = append(os.Environ(), "GOBIN="+bin, "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("peers: go install %s: %w\n%s\nput a temporal CLI on PATH, or let the Go module proxy be reached", TemporalCLI, err, tail(out))
	}
	return cached, nil
}

// RestateSource is the directory of Restate's service with its node_modules (which
// hold restate-server too), installed with `npm ci` once if they are not.
func (t Tools) RestateSource(ctx context.Context) (string, error) {
	dir, err := filepath.Abs(t.Restate)
	if err != nil {
		return "", err
	}
	t.Restate = dir // the server and the service run in their run's directory
	if _, err := os.Stat(filepath.Join(t.Restate, "service.mjs")); err != nil {
		return "", fmt.Errorf("peers: Restate's service is not in %s (%w): run from the repository's root, or pass its bench/peers/restate", t.Restate, err)
	}
	if _, err := os.Stat(restateServer(t.Restate)); err == nil {
		return t.Restate, nil
	}
	t.Log.Info("peers: installing Restate's server and SDK once", "command", "npm ci --ignore-scripts --prefix "+t.Restate)
	cmd := exec.CommandContext(ctx, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--prefix", t.Restate)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("peers: npm ci in %s: %w\n%s", t.Restate, err, tail(out))
	}
	if _, err := os.Stat(restateServer(t.Restate)); err != nil {
		return "", fmt.Errorf("peers: npm installed no restate-server for %s: %w", npmPlatform(), errors.Unwrap(err))
	}
	return t.Restate, nil
}

// npmPlatform names this machine as restate-server's npm packages do.
func npmPlatform() string {
	arch := runtime.GOARCH
	if arch == "amd64" {
		arch = "x64"
	}
	return runtime.GOOS + "-" + arch
}

// tail is the last lines of a command's output, for an error.
func tail(out []byte) []byte {
	const keep = 2000
	if len(out) > keep {
		return out[len(out)-keep:]
	}
	return out
}
