package peers

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/agentmux/agentmux/bench"
)

// The peers, by the names loadgen --peers takes.
const (
	NameTemporal = "temporal"
	NameRestate  = "restate"
)

// peer is a started peer.
type peer interface {
	bench.Peer
	Close()
}

// Run starts the named peer in a directory of its own, warms it up, runs the scenario
// on it and stops it. Its system in the report is named Temporal or Restate.
func Run(ctx context.Context, name string, c bench.Config, tools Tools, log *slog.Logger, progress bench.Progress) (*bench.System, error) {
	dir, err := os.MkdirTemp("", "agentmux-peer-"+name+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	p, system, err := start(ctx, name, tools, dir, log)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	warm := c
	warm.Sessions = min(c.Sessions, bench.WarmUpSessions) // as agentmux is warmed up
	if _, err := bench.RunPeer(ctx, warm, "warm-"+system, p, func(_ string, done, total int) { progress("warm-up "+system, done, total) }); err != nil {
		return nil, fmt.Errorf("peers: %s's warm-up: %w", system, err)
	}
	if err := bench.Settle(ctx); err != nil {
		return nil, err
	}
	s, err := bench.RunPeer(ctx, c, system, p, progress)
	if err != nil {
		return nil, fmt.Errorf("peers: %s: %w", system, err)
	}
	return s, nil
}

// start finds or builds the named peer's programs and starts it.
func start(ctx context.Context, name string, tools Tools, dir string, log *slog.Logger) (peer, string, error) {
	switch name {
	case NameTemporal:
		bin, err := tools.Temporal(ctx)
		if err != nil {
			return nil, "", err
		}
		p, err := StartTemporal(ctx, bin, dir, log)
		return p, "Temporal", err
	case NameRestate:
		src, err := tools.RestateSource(ctx)
		if err != nil {
			return nil, "", err
		}
		p, err := StartRestate(ctx, tools.Node, src, dir)
		return p, "Restate", err
	}
	return nil, "", fmt.Errorf("peers: no peer %q: use %s or %s", name, NameTemporal, NameRestate)
}
