package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// tasks lists what the work queue holds: tasks and pipeline runs waiting for a node,
// and those a node has taken and not finished.
func tasks(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("tasks", stdout, stderr)
	to := reachFlags(fs)
	host := fs.String("host", "", "only the tasks of this `host` (or pipeline)")
	out := newOutputFlags(fs)
	if _, err := parse(fs, args); err != nil {
		return usageError(stderr, err)
	}
	form, err := out.form()
	if err != nil {
		return usageError(stderr, err)
	}
	c, code := to.client("tasks", stderr)
	if c == nil {
		return code
	}
	defer c.close()
	ctx, cancel := c.timeout(clientTimeout)
	defer cancel()
	queued, err := store.ReadTasks(ctx, c.nc)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux tasks:", c.explain(err))
		return exitError
	}
	// Which of them a node runs: the others wait for one.
	running := map[string]string{}
	if live, _, err := fleetSessions(ctx, c); err == nil {
		for _, s := range live {
			if s.Task != "" {
				running[s.Task] = s.Node
			}
		}
	}
	held, err := heldHosts(ctx, c)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux tasks:", c.explain(err))
		return exitError
	}
	type row struct {
		store.QueuedTask
		State string `json:"state"`          // waiting, held (its host, or a host of its pipeline's stages, at its daily budget), or running
		Node  string `json:"node,omitempty"` // the node running it
	}
	var list []row
	for _, t := range queued {
		if *host != "" && t.Queue != *host {
			continue
		}
		r := row{QueuedTask: t, State: "waiting"}
		if held[t.Queue] {
			r.State = "held"
		}
		if node, ok := running[t.ID]; ok {
			r.State, r.Node = "running", node
		}
		list = append(list, r)
	}
	if form == outJSON {
		return jsonLines(stdout, list)
	}
	if len(list) == 0 {
		fmt.Fprintln(stdout, "the work queue is empty")
		return exitOK
	}
	header := []string{"TASK", "QUEUE", "STATE", "NODE", "QUEUED", "PROMPT"}
	rows := make([][]string, 0, len(list))
	now := time.Now()
	for _, t := range list {
		prompt := t.Prompt
		if form != outWide {
			prompt = oneLine(prompt, 60)
		}
		rows = append(rows, []string{dash(t.ID), t.Queue, t.State, dash(t.Node), now.Sub(t.Stored).Round(time.Second).String() + " ago", dash(prompt)})
	}
	return table(stdout, header, rows)
}

// heldHosts are the hosts at their daily budget, whose waiting tasks are held, and the
// pipelines with such a host among their stages' (their runs wait too).
func heldHosts(ctx context.Context, c *busClient) (map[string]bool, error) {
	held := map[string]bool{}
	fb, err := c.fleetBudget(ctx)
	if err != nil || fb.usd == 0 {
		return held, err
	}
	days, err := store.ReadSpend(ctx, c.nc, time.Now())
	if err != nil {
		return nil, err
	}
	for _, d := range fb.today(days, time.Now()) {
		held[d.Host] = d.State == wire.DailyHeld
	}
	var pipelines map[string]*config.Pipeline
	if c.fleet.m != nil {
		pipelines = c.fleet.m.Pipelines
	}
	for name, p := range pipelines {
		for _, st := range p.Stages {
			held[name] = held[name] || held[st.Host]
		}
	}
	return held, nil
}
