package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentmux/agentmux/bench"
)

// hooks runs the hooks path: Claude Code http hooks posted to the console at a rate.
func hooks(args []string, stdout, stderr io.Writer) int {
	hc := bench.HooksDefaults()
	fs := flag.NewFlagSet("loadgen hooks", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Float64Var(&hc.Rate, "rate", hc.Rate, "hooks per second, across the sessions")
	fs.IntVar(&hc.Hooks, "hooks", hc.Hooks, "hooks in all")
	fs.IntVar(&hc.Sessions, "sessions", hc.Sessions, "Claude Code sessions the hooks come from")
	fs.DurationVar(&hc.Timeout, "timeout", hc.Timeout, "give up after this long")
	jsonOut := fs.String("json", "-", "write the JSON report to this `file` (- for stdout)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	rep, err := bench.RunHooks(ctx, hc, log)
	if err != nil {
		fmt.Fprintln(stderr, "loadgen hooks:", err)
		return 1
	}
	busy := ""
	if rep.Busy {
		busy = " (busy: other processes kept over a quarter of a core busy)"
	}
	fmt.Fprintf(stderr, "hooks: %d PermissionRequest hooks at %.0f/s from %d sessions: %d allowed, %d failed; round trip p50 %.3f ms, p99 %.3f ms, p99.9 %.3f ms, max %.3f ms; %.0f hooks per CPU-second%s\n",
		rep.Hooks, hc.Rate, hc.Sessions, rep.Allowed, rep.Failed, float64(rep.Latency.P50)/1000, float64(rep.Latency.P99)/1000,
		float64(rep.Latency.P999)/1000, float64(rep.Latency.Max)/1000, rep.PerCPU, busy)
	if err := writeJSON(*jsonOut, stdout, rep); err != nil {
		fmt.Fprintln(stderr, "loadgen hooks:", err)
		return 1
	}
	if rep.Failed > 0 {
		fmt.Fprintf(stderr, "loadgen hooks: %d hooks got no decision (first errors: %v)\n", rep.Failed, rep.Errors)
		return 1
	}
	return 0
}
