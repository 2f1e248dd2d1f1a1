package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/agentmux/agentmux/bench"
	"github.com/agentmux/agentmux/sim"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "agent":
			// The process agent: the scripted agent on stdio.
			if err := sim.Run(os.Stdin, os.Stdout, sim.Options{}); err != nil {
				fmt.Fprintln(stderr, "loadgen agent:", err)
				return 1
			}
			return 0
		case "node":
			return bench.RunNodeProcess(args[1:], stdout, stderr) // a member of `loadgen fleet`
		case "fleet":
			return fleet(args[1:], stdout, stderr)
		case "hooks":
			return hooks(args[1:], stdout, stderr)
		case "side-by-side":
			return sideBySide(args[1:], stdout, stderr)
		case "one":
			return one(args[1:], os.Stdin, stdout, stderr) // a side of `loadgen side-by-side`
		}
	}
	return scenario(args, stdout, stderr)
}

// outputs are where a scenario's run goes, and how it runs, beside the scenario itself.
type outputs struct {
	peers      peerFlags
	runs       int
	json, png  string
	logLevel   string
	cpuProfile string
}

// scenario runs the scenario its flags describe (its runs), and reports it: a table
// and the medians on stderr, the JSON report, the latency plot.
func scenario(args []string, stdout, stderr io.Writer) int {
	c, o, code := parseScenario(args, stderr)
	if code >= 0 {
		return code
	}
	var level slog.Level
	_ = level.UnmarshalText([]byte(strings.ToUpper(o.logLevel)))
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "loadgen:", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(stderr, "loadgen:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	if len(c.Peers) > 0 {
		var err error
		if c.PeerCommand, err = o.peers.peerCommand(ctx, c.NodeBinary); err != nil {
			fmt.Fprintln(stderr, "loadgen:", err)
			return 1
		}
	}
	bar := newBar(stderr)
	all, err := bench.RunN(ctx, c, o.runs, log, bar.update)
	bar.done()
	if err != nil {
		fmt.Fprintln(stderr, "loadgen:", err)
		return 1
	}
	return report(all, o, stdout, stderr)
}

// parseScenario reads a scenario's flags; code is the exit code when it ends there
// (help, a bad flag), else -1.
func parseScenario(args []string, stderr io.Writer) (c bench.Config, o outputs, code int) {
	c = bench.Defaults()
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenarioFlags(fs, &c)
	fs.StringVar(&c.Agent, "agent", c.Agent, "agent kind: process (subprocesses) or inproc (pipes in this process)")
	fs.StringVar(&c.NATSURL, "nats", "", "NATS `url` to drive (default: an embedded server)")
	fs.BoolVar(&c.RemoteSupervisors, "remote-supervisors", false, "supervisors fast/nobody already run on --nats; start none here")
	fs.IntVar(&c.Nodes, "nodes", 0, "also run on a fleet of this many nodes in one NATS cluster (agents on one, supervisors on the rest)")
	fs.BoolVar(&c.Replicated, "replicated", false, "also run as the single node does on a cluster of three servers: the audit at three replicas")
	fs.BoolVar(&c.Baselines, "baselines", false, "also run B0, B1, B1a (B1 writing agentmux's audit records), B2, the wire's floor and the Node.js harness, and report the ratios")
	fs.StringVar(&c.NodeBinary, "node", c.NodeBinary, "`node` binary for the Node.js harness")
	fs.StringVar(&c.NodeModules, "node-modules", c.NodeModules, "the Node.js harness's node_modules `dir` (npm ci --prefix bench/nodeharness)")
	fs.BoolVar(&c.Probes, "probes", false, "also measure memory and goroutines per idle session, idle CPU and start rate")
	fs.IntVar(&c.ProbeSessions, "probe-sessions", c.ProbeSessions, "idle sessions of the probes")
	fs.StringVar(&o.peers.names, "peers", "", "also run on these systems users would pick instead: "+bench.PeerTemporal+","+bench.PeerRestate+" (each found, or built once into --peers-cache)")
	fs.StringVar(&o.peers.dir, "peers-dir", filepath.Join("bench", "peers"), "the bench/peers module `dir`, whose cmd/peerload runs a peer")
	fs.StringVar(&o.peers.cache, "peers-cache", "", "where the peers' programs are built (default: the user's cache directory's agentmux/peers)")
	fs.IntVar(&o.runs, "runs", 1, "run the scenario this many times and report the median of each ratio")
	fs.StringVar(&o.json, "json", "-", "write the JSON report to this `file` (- for stdout)")
	fs.StringVar(&o.png, "png", filepath.Join(os.TempDir(), "agentmux-loadgen.png"), "write the latency percentile plot to this `file` (empty: none)")
	fs.StringVar(&o.logLevel, "log", "error", "log `level` of the node")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this `file`")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, o, 0
		}
		return c, o, 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "loadgen: cannot find my own binary to run agents:", err)
		return c, o, 1
	}
	c.AgentCommand = []string{self, "agent"}
	c.Peers = o.peers.list()
	if len(c.Peers) > 0 {
		c.PeerCommand = []string{"peerload"} // for Validate; built once the run starts
	}
	if err := c.Validate(); err != nil {
		fmt.Fprintln(stderr, "loadgen:", err)
		return c, o, 2
	}
	return c, o, -1
}

// report writes the runs' table and medians, the JSON report and the plot; its exit
// code says whether any run failed its targets.
func report(all *bench.Runs, o outputs, stdout, stderr io.Writer) int {
	rep := all.Runs[len(all.Runs)-1]
	bench.WriteTable(stderr, rep)
	bench.WriteMedians(stderr, all)
	var out any = rep
	if o.runs > 1 {
		out = all
	}
	if err := writeJSON(o.json, stdout, out); err != nil {
		fmt.Fprintln(stderr, "loadgen:", err)
		return 1
	}
	if o.png != "" && rep.HasLatencies() {
		if err := writePNG(o.png, rep); err != nil {
			fmt.Fprintln(stderr, "loadgen:", err)
			return 1
		}
		fmt.Fprintln(stderr, "plot:", o.png)
	}
	for _, r := range all.Runs {
		if err := r.Err(); err != nil {
			fmt.Fprintln(stderr, "loadgen:", err)
			return 1
		}
	}
	return 0
}

func writeJSON(path string, stdout io.Writer, rep any) error {
	w := stdout
	if path != "-" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

func writePNG(path string, rep *bench.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := bench.WritePNG(f, rep); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
