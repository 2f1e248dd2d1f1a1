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
	flag.Parse()
	if *name == "" {
		return fmt.Errorf("--peer is required: %s or %s", peers.NameTemporal, peers.NameRestate)
	}
	if *cache == "" {
		dir, err := peers.DefaultCache()
		if err != nil {
			return err
		}
		*cache = dir
	}
	var c bench.Config
	if err := json.NewDecoder(os.Stdin).Decode(&c); err != nil {
		return fmt.Errorf("the scenario on stdin: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	tools := peers.Tools{Cache: *cache, Restate: *restate, Node: *node, Log: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	s, err := peers.Run(ctx, *name, c, tools, log, func(system string, done, total int) {
		fmt.Fprintf(os.Stderr, "progress %d %d %s\n", done, total, system)
	})
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(bench.NewPeerOutput(s))
}
