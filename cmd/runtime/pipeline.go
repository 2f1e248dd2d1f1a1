package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nuid"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/node"
	"github.com/agentmux/agentmux/wire"
)

// pipelineArgs reads `<pipeline> name=value…` when pos names one of manifest m's
// pipelines; ok is false when it does not (pos is a host and a prompt), or m is nil.
func pipelineArgs(cmd string, pos []string, m *config.Manifest, stderr io.Writer) (p *config.Pipeline, params map[string]string, code int, ok bool) {
	if len(pos) == 0 || m == nil {
		return nil, nil, exitOK, false
	}
	if p = m.Pipelines[pos[0]]; p == nil {
		return nil, nil, exitOK, false
	}
	params = map[string]string{}
	for _, arg := range pos[1:] {
		name, value, found := strings.Cut(arg, "=")
		if !found || !slices.Contains(p.Params, name) {
			fmt.Fprintf(stderr, "agentmux %s: %q is not a param of pipeline %s: give each as name=value; its params are %s\n", cmd, arg, p.Name, strings.Join(p.Params, ", "))
			return nil, nil, exitUsage, true
		}
		params[name] = value
	}
	for _, name := range p.Params {
		if _, set := params[name]; !set {
			fmt.Fprintf(stderr, "agentmux %s: pipeline %s needs %s=…; its params are %s\n", cmd, p.Name, name, strings.Join(p.Params, ", "))
			return nil, nil, exitUsage, true
		}
	}
	return p, params, exitOK, true
}

// runPipeline runs a pipeline on an embedded node, like a host's session.
func runPipeline(m *config.Manifest, p *config.Pipeline, params map[string]string, id string, events bool, logLevel, metricsAddr string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	n, err := node.Start(ctx, node.Options{Manifest: m, Log: newLogger(stderr, logLevel), Ephemeral: true, NoTasks: true, MetricsAddr: metricsAddr})
	if err != nil {
		fmt.Fprintln(stderr, "agentmux run:", err)
		return exitError
	}
	defer func() { _ = n.Stop(context.Background()) }()
	if id == "" {
		id = "p-" + nuid.Next()
	}
	var printer *eventPrinter
	if events {
		if printer, err = followEvents(n.Bus.Conn, pipelineSubjects(p, id), stderr); err != nil {
			fmt.Fprintln(stderr, "agentmux run:", err)
			return exitError
		}
		defer printer.close()
	}
	_, reply := n.RunPipeline(p.Name, id, params)
	select {
	case res := <-reply:
		if printer != nil {
			printer.waitEnded(n.Bus.Conn, endedEventWait) // the last events, pipeline.ended among them
		}
		return printRun(res, stdout, stderr)
	case <-ctx.Done():
		fmt.Fprintln(stderr, "agentmux run: interrupted")
		return exitError
	}
}

// pipelineSubjects match a run's events and its stages' sessions' events.
func pipelineSubjects(p *config.Pipeline, id string) []string {
	out := []string{wire.SessionEvents(p.Name, id)}
	for _, st := range p.Stages {
		out = append(out, wire.SessionEvents(st.Host, id+"-"+st.Name))
	}
	return out
}

func printRun(res *wire.PipelineRun, stdout, stderr io.Writer) int {
	out, _ := json.Marshal(res)
	fmt.Fprintln(stdout, string(out))
	if res.Outcome != wire.StageOK {
		fmt.Fprintf(stderr, "agentmux: pipeline %s run %s failed: %s\n", res.Pipeline, res.ID, res.Error)
		return exitError
	}
	return exitOK
}

// submitPipeline queues a run for the fleet.
func submitPipeline(f *reached, p *config.Pipeline, params map[string]string, id string, follow bool, ttl time.Duration, stdout, stderr io.Writer) int {
	if id == "" {
		id = "p-" + nuid.Next()
	}
	if err := wire.CheckTaskID(id); err != nil {
		return usageError(stderr, fmt.Errorf("--id: %w", err))
	}
	c, err := dialFleet("submit", f, nil)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux submit:", err)
		return exitError
	}
	defer c.close()
	var printer *eventPrinter
	if follow {
		if printer, err = c.follow(pipelineSubjects(p, id), stderr); err != nil {
			fmt.Fprintln(stderr, "agentmux submit:", err)
			return exitError
		}
	}
	data, _ := json.Marshal(&wire.PipelineTask{ID: id, Pipeline: p.Name, Params: params})
	by, _ := responder(c, "") // the bus lets an operator queue as itself only
	if code := c.queue("submit", wire.TaskSubjectBy(p.Name, by), id, data, ttl, stderr); code != exitOK {
		return code
	}
	if !follow {
		fmt.Fprintln(stdout, id)
		return exitOK
	}
	if !printer.await("run", 0, ttl, stderr) {
		return exitError
	}
	printer.mu.Lock()
	run := printer.run
	printer.mu.Unlock()
	return printRun(run, stdout, stderr)
}
