// Command peerload runs loadgen's scenario on one peer (temporal or restate) and
// writes its figures, a bench.PeerOutput, as JSON on stdout. loadgen --peers runs it; it
// reads the scenario, a bench.Config as JSON, on stdin, and writes its progress on
// stderr as lines "progress <done> <total> <system>".
//
//	peerload --peer temporal < scenario.json
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentmux/agentmux/bench"
	"github.com/agentmux/agentmux/bench/peers"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "peerload:", err)
		os.Exit(1)
	}
}

func run() error {
	name := flag.String("peer", "", "the peer to run: "+peers.NameTemporal+" or "+peers.NameRestate)
	cache := flag.String("cache", "", "where built programs are kept (default: the user's cache directory's agentmux/peers)")
	restate := flag.String("restate", "restate", "the directory of Restate's service.mjs and package.json")
	node := flag.String("node", "node", "Node.js, for Restate's service")
	prepare := flag.Bool("prepare", false, "find or build every peer's programs (the temporal CLI, Restate's server and SDK), say where they are, and exit")
	flag.Parse()
	if *prepare {
		return prepareAll(*cache, *restate)
	}
	if *name == "" {
		return fmt.Errorf("--peer is required: %s or %s", peers.NameTemporal, peers.NameRestate)
	}
	tools, err := newTools(*cache, *restate, *node)
	if err != nil {
		return err
	}
	var c bench.Config
	if err := json.NewDecoder(os.Stdin).Decode(&c); err != nil {
		return fmt.Errorf("the scenario on stdin: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := peers.Run(ctx, *name, c, tools, log, func(system string, done, total int) {
		fmt.Fprintf(os.Stderr, "progress %d %d %s\n", done, total, system)
	})
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(bench.NewPeerOutput(s))
}

// newTools finds and builds the peers' programs in cache (the user's cache directory's
// agentmux/peers when empty), Restate's from the directory restate.
func newTools(cache, restate, node string) (peers.Tools, error) {
	if cache == "" {
		dir, err := peers.DefaultCache()
		if err != nil {
			return peers.Tools{}, err
		}
		cache = dir
	}
	return peers.Tools{Cache: cache, Restate: restate, Node: node, Log: slog.New(slog.NewTextHandler(os.Stderr, nil))}, nil
}

// prepareAll finds or builds every peer's programs ahead of a run, as CI does.
func prepareAll(cache, restate string) error {
	tools, err := newTools(cache, restate, "node")
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	temporal, err := tools.Temporal(ctx)
	if err != nil {
		return err
	}
	src, err := tools.RestateSource(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("temporal: %s\nrestate: %s\n", temporal, src)
	return nil
}
