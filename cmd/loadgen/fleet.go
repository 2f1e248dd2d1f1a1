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
	"path/filepath"
	"syscall"

	"github.com/agentmux/agentmux/bench"
)

// scenarioFlags are the flags that shape the load, for every kind of run.
func scenarioFlags(fs *flag.FlagSet, c *bench.Config) {
	fs.IntVar(&c.Sessions, "sessions", c.Sessions, "sessions in all (each with its own agent; all may run at once)")
	fs.Float64Var(&c.Rate, "rate", c.Rate, "session arrivals per second (0: all at once)")
	fs.IntVar(&c.Progress, "progress", c.Progress, "progress lines per session")
	fs.Float64Var(&c.ProgressRate, "progress-rate", c.ProgressRate, "progress lines per second per session (0: back to back)")
	fs.IntVar(&c.Questions, "questions", c.Questions, "questions per session")
	fs.IntVar(&c.Approvals, "approvals", c.Approvals, "approvals per session")
	fs.IntVar(&c.Unrouted, "unrouted", c.Unrouted, "questions per session that nobody answers (default lateness)")
	fs.IntVar(&c.Checkpoints, "checkpoints", c.Checkpoints, "checkpoint lines per session, one after each request (the node keeps each in its store)")
	fs.IntVar(&c.CheckpointBytes, "checkpoint-bytes", 1024, "bytes of each checkpoint's state")
	fs.DurationVar(&c.Think, "think", c.Think, "time between a session's requests")
	fs.DurationVar(&c.QuestionTimeout, "question-timeout", c.QuestionTimeout, "question timeout (the unrouted questions' deadline)")
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "give up after this long (each fleet shape, with fleet)")
	fs.BoolVar(&c.KeepEvents, "keep-events", c.KeepEvents, "keep every event in the history stream, as a node does by default ([audit] keep_events)")
}

// fleet runs the scaling curve: the scenario on fleets of node processes of each shape.
func fleet(args []string, stdout, stderr io.Writer) int {
	c := bench.Defaults()
	fs := flag.NewFlagSet("loadgen fleet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: loadgen fleet [--shapes 1x1,1x2,1x4,2x1,4x1] [scenario flags]\n\n"+
			"Runs the scenario on fleets of agentmux nodes, each node a process of its own on one NATS server,\n"+
			"in-process load agents on the agent nodes and the supervisors on the others; a shape is\n"+
			"<agent nodes>x<supervisor nodes>. Reports requests/s, latency and CPU per shape: JSON on stdout,\n"+
			"a table on stderr, a PNG of the curve.")
		fs.PrintDefaults()
	}
	scenarioFlags(fs, &c)
	shapes := fs.String("shapes", "1x1,1x2,1x4,2x1,4x1", "fleet `shapes` to run, agent nodes x supervisor nodes")
	jsonOut := fs.String("json", "-", "write the JSON report to this `file` (- for stdout)")
	pngOut := fs.String("png", filepath.Join(os.TempDir(), "agentmux-fleet.png"), "write the scaling curve to this `file` (empty: none)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	list, err := bench.ParseShapes(*shapes)
	if err != nil {
		fmt.Fprintln(stderr, "loadgen fleet:", err)
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "loadgen fleet: cannot find my own binary to run nodes:", err)
		return 1
	}
	c.NodeCommand = []string{self, "node"}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bar := newBar(stderr)
	rep, err := bench.RunFleetCurve(ctx, c, list, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError})), bar.update)
	bar.done()
	if err != nil {
		fmt.Fprintln(stderr, "loadgen fleet:", err)
		return 1
	}
	bench.WriteFleetTable(stderr, rep)
	if err := writeJSON(*jsonOut, stdout, rep); err != nil {
		fmt.Fprintln(stderr, "loadgen fleet:", err)
		return 1
	}
	if *pngOut != "" {
		f, err := os.Create(*pngOut)
		if err == nil {
			err = bench.WriteFleetPNG(f, rep)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintln(stderr, "loadgen fleet:", err)
			return 1
		}
		fmt.Fprintln(stderr, "plot:", *pngOut)
	}
	for _, p := range rep.Points {
		if p.System.Failed > 0 || p.System.Missing > 0 {
			fmt.Fprintf(stderr, "loadgen fleet: %s: %d sessions failed, %d requests missing\n", p.Shape, p.System.Failed, p.System.Missing)
			return 1
		}
	}
	return 0
}
