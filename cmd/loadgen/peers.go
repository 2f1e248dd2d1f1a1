package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// peerFlags are --peers' settings.
type peerFlags struct {
	names string // --peers: temporal,restate
	dir   string // the bench/peers module
	cache string // where the peers' programs are built
}

// peerCommand builds the bench/peers module's cmd/peerload into the cache (go build
// keeps what it compiled, so again is quick) and returns the command that runs a peer.
func (p *peerFlags) peerCommand(ctx context.Context, node string) ([]string, error) {
	dir, err := filepath.Abs(p.dir)
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "go.mod"))
	}
	if err != nil {
		return nil, fmt.Errorf("--peers needs the bench/peers module in %s (%w): run from the repository's root, or pass --peers-dir", p.dir, err)
	}
	cache := p.cache
	if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("--peers: no cache directory (%w): pass --peers-cache", err)
		}
		cache = filepath.Join(base, "agentmux", "peers")
	}
	bin := filepath.Join(cache, "peerload")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/peerload")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		hint := ""
		if strings.Contains(string(out), "go mod tidy") {
			hint = "\nbench/peers is a module of its own that uses agentmux's: when agentmux's requirements change, run `go mod tidy` in bench/peers"
		}
		return nil, fmt.Errorf("--peers: build bench/peers/cmd/peerload: %w\n%s%s", err, out, hint)
	}
	return []string{bin, "--cache", cache, "--restate", filepath.Join(dir, "restate"), "--node", node}, nil
}

// list is the peers asked for.
func (p *peerFlags) list() []string {
	var out []string
	for n := range strings.SplitSeq(p.names, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}
