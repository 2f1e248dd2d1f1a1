package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/agentmux/agentmux/bench"
)

// sideBySide runs agentmux and B1a at the same time, each in a process of its own
// (`loadgen one`), --pairs times, and reports their requests per CPU-second.
func sideBySide(args []string, stdout, stderr io.Writer) int {
	c := bench.Defaults()
	fs := flag.NewFlagSet("loadgen side-by-side", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: loadgen side-by-side [--pairs 5] [scenario flags]\n\n"+
			"Runs the scenario on agentmux and on B1a at the same time, each system in a process of its own,\n"+
			"their sessions started together, --pairs times, and reports agentmux's requests per CPU-second\n"+
			"over B1a's: one run's CPU swings by a fifth on a shared machine, and both systems go through\n"+
			"the same swings. Latencies are not compared: each system is the other's load.")
		fs.PrintDefaults()
	}
	scenarioFlags(fs, &c)
	fs.StringVar(&c.Agent, "agent", c.Agent, "agent kind: process (subprocesses) or inproc (pipes in each system's process)")
	pairs := fs.Int("pairs", 5, "runs of the two systems side by side")
	jsonOut := fs.String("json", "-", "write the JSON report to this `file` (- for stdout)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "loadgen side-by-side: cannot find my own binary to run the systems:", err)
		return 1
	}
	c.AgentCommand = []string{self, "agent"}
	if err := c.Validate(); err != nil {
		fmt.Fprintln(stderr, "loadgen side-by-side:", err)
		return 2
	}
	if *pairs < 1 {
		fmt.Fprintln(stderr, "loadgen side-by-side: --pairs must be at least 1")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var all []bench.Pair
	for i := range *pairs {
		p, err := runPair(ctx, self, c)
		if err != nil {
			fmt.Fprintf(stderr, "loadgen side-by-side: run %d: %v\n", i+1, err)
			return 1
		}
		fmt.Fprintf(stderr, "run %d of %d: requests per CPU-second / B1a %.3f\n", i+1, *pairs, p.PerCPU())
		all = append(all, p)
	}
	rep := bench.NewPairs(all)
	fmt.Fprintln(stderr)
	bench.WritePairs(stderr, rep)
	if err := writeJSON(*jsonOut, stdout, rep); err != nil {
		fmt.Fprintln(stderr, "loadgen side-by-side:", err)
		return 1
	}
	for _, p := range all {
		for _, s := range []*bench.System{p.Agentmux, p.B1a} {
			if s.Failed > 0 || s.Missing > 0 {
				fmt.Fprintf(stderr, "loadgen side-by-side: %s: %d sessions failed, %d requests unanswered (first errors: %v)\n", s.Name, s.Failed, s.Missing, s.Errors)
				return 1
			}
		}
	}
	return 0
}

// runPair starts both systems, waits until both are up, starts their sessions together
// and collects what each measured.
func runPair(ctx context.Context, self string, c bench.Config) (bench.Pair, error) {
	scenario, err := json.Marshal(c)
	if err != nil {
		return bench.Pair{}, err
	}
	names := []string{bench.SystemAgentmux, bench.SystemB1a}
	sides := make([]*side, 0, len(names))
	defer func() {
		for _, s := range sides {
			s.stop()
		}
	}()
	for _, name := range names {
		s, err := startSide(ctx, self, name, scenario)
		if err != nil {
			return bench.Pair{}, err
		}
		sides = append(sides, s)
	}
	for _, s := range sides {
		if err := s.expect("ready"); err != nil {
			return bench.Pair{}, err
		}
	}
	for _, s := range sides {
		if _, err := io.WriteString(s.in, "go\n"); err != nil {
			return bench.Pair{}, fmt.Errorf("%s: %w%s", s.name, err, s.said())
		}
	}
	measured := make([]*bench.System, len(sides))
	for i, s := range sides {
		if measured[i], err = s.result(); err != nil {
			return bench.Pair{}, err
		}
	}
	return bench.Pair{Agentmux: measured[0], B1a: measured[1]}, nil
}

// side is one system's `loadgen one` process.
type side struct {
	name   string
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr bytes.Buffer
}

func startSide(ctx context.Context, self, name string, scenario []byte) (*side, error) {
	s := &side{name: name, cmd: exec.CommandContext(ctx, self, "one", name)}
	s.cmd.Stderr = &s.stderr
	var err error
	if s.in, err = s.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s.out = bufio.NewReader(out)
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	if _, err := s.in.Write(append(scenario, '\n')); err != nil {
		return nil, fmt.Errorf("%s: the scenario: %w%s", name, err, s.said())
	}
	return s, nil
}

// expect reads the line want from the process.
func (s *side) expect(want string) error {
	line, err := s.out.ReadString('\n')
	if strings.TrimSpace(line) != want {
		return fmt.Errorf("%s wrote %q, not %q (%v)%s", s.name, line, want, err, s.said())
	}
	return nil
}

// result reads what the process measured and waits for it to exit.
func (s *side) result() (*bench.System, error) {
	var sys bench.System
	derr := json.NewDecoder(s.out).Decode(&sys)
	if err := s.cmd.Wait(); err != nil {
		return nil, fmt.Errorf("%s: %w%s", s.name, err, s.said())
	}
	if derr != nil {
		return nil, fmt.Errorf("%s's figures: %w%s", s.name, derr, s.said())
	}
	return &sys, nil
}

// stop kills the process unless it has exited, and reaps it.
func (s *side) stop() {
	if s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

// said is the end of what the process wrote on stderr, for an error. It stops the
// process first, so that the stderr copy has finished when it is read.
func (s *side) said() string {
	s.stop()
	if s.stderr.Len() == 0 {
		return ""
	}
	b := s.stderr.Bytes()
	return fmt.Sprintf("; it said: %s", bytes.TrimSpace(b[max(0, len(b)-2000):]))
}

// one runs the scenario, read as one line of JSON on stdin, on one system alone
// (`loadgen one agentmux|B1a`): it writes "ready" once the system is up, waits for a
// line on stdin, runs the sessions and writes what it measured as JSON. It is what
// `loadgen side-by-side` runs, twice at once.
func one(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintf(stderr, "usage: loadgen one %s|%s, with the scenario as JSON on stdin\n", bench.SystemAgentmux, bench.SystemB1a)
		return 2
	}
	in := bufio.NewReader(stdin)
	line, err := in.ReadBytes('\n')
	var c bench.Config
	if err == nil {
		err = json.Unmarshal(line, &c)
	}
	if err != nil {
		fmt.Fprintln(stderr, "loadgen one: the scenario on stdin:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	s, err := bench.RunOne(ctx, c, args[0], log, func() error {
		if _, err := fmt.Fprintln(stdout, "ready"); err != nil {
			return err
		}
		_, err := in.ReadString('\n')
		return err
	})
	if err != nil {
		fmt.Fprintln(stderr, "loadgen one:", err)
		return 1
	}
	if err := json.NewEncoder(stdout).Encode(s); err != nil {
		fmt.Fprintln(stderr, "loadgen one:", err)
		return 1
	}
	return 0
}
