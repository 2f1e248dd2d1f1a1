package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/tracing"
	"github.com/agentmux/agentmux/wire"
)

const (
	publishTimeout   = 10 * time.Second
	publishRetryWait = 250 * time.Millisecond
)

func submit(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("submit", stdout, stderr)
	to := reachFlags(fs)
	follow := fs.Bool("follow", false, "print the session's events on stderr until it ends; exit as run does")
	timeout := fs.Duration("timeout", 0, "with --follow, stop following after this `duration` (exit 1; the task goes on); 0: no limit")
	id := fs.String("id", "", "task `id` (default: a fresh one); also the session id")
	ttl := fs.Duration("ttl", 0, "drop the task from the queue if no node has started it within this `duration` (at least 1s); 0: it waits as long as it takes")
	resume := resumeFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	if *ttl != 0 && *ttl < time.Second {
		return usageError(stderr, fmt.Errorf("--ttl %v: the queue keeps a task for 1s at the least", *ttl))
	}
	f, err := to.resolve(os.Getenv)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux submit:", err)
		return exitUsage
	}
	if p, params, code, ok := pipelineArgs("submit", pos, f.m, stderr); ok {
		if p == nil {
			return code
		}
		return submitPipeline(f, p, params, *id, *follow, *ttl, stdout, stderr)
	}
	host, prompt, code := sessionArgs("submit", pos, f.m, stderr)
	if code != exitOK {
		return code
	}
	if *id == "" {
		*id = "t-" + nuid.Next()
	}
	if err := wire.CheckTaskID(*id); err != nil {
		return usageError(stderr, fmt.Errorf("--id: %w", err))
	}
	c, err := dialFleet("submit", f, nil)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux submit:", err)
		return exitError
	}
	defer c.close()
	var printer *eventPrinter
	if *follow {
		if printer, err = c.follow([]string{wire.SessionEvents(host, *id)}, stderr); err != nil {
			fmt.Fprintln(stderr, "agentmux submit:", err)
			return exitError
		}
	}
	by, _ := responder(c, "") // the bus user, or $USER on a bus without users
	data, _ := json.Marshal(&wire.Task{ID: *id, Host: host, Prompt: prompt, Resume: *resume, By: by})
	if code := c.queue("submit", wire.TaskSubjectBy(host, by), *id, data, *ttl, stderr); code != exitOK {
		return code
	}
	if !c.served(host) {
		fmt.Fprintf(stderr, "agentmux submit: no live node runs host '%s' now: the task waits in the queue until one does (`agentmux nodes` lists them)\n", host)
	}
	if why := c.held(host); why != "" {
		fmt.Fprintf(stderr, "agentmux submit: the task is held: %s\n", why)
	}
	if !*follow {
		fmt.Fprintln(stdout, *id)
		return exitOK
	}
	if !printer.await("task", *timeout, *ttl, stderr) {
		return exitError
	}
	printer.mu.Lock()
	ended := printer.last
	printer.mu.Unlock()
	if ended.Outcome != "ok" {
		fmt.Fprintf(stderr, "agentmux: session %s failed: %s\n", ended.Session, ended.Error)
		return exitError
	}
	fmt.Fprintln(stdout, string(ended.Result))
	return exitOK
}

// queue publishes a task to the work queue under its id, retrying while a cluster
// elects the stream's leader. A task whose id the stream has seen within its duplicate
// window is not queued again: that is an error, which says what became of the first.
func (c *busClient) queue(cmd, subject, id string, data []byte, ttl time.Duration, stderr io.Writer) int {
	ctx, cancel := c.timeout(publishTimeout)
	defer cancel()
	opts := []jetstream.PublishOpt{jetstream.WithMsgID(id), jetstream.WithRetryAttempts(int(publishTimeout / publishRetryWait)),
		jetstream.WithRetryWait(publishRetryWait)}
	if ttl > 0 {
		opts = append(opts, jetstream.WithMsgTTL(ttl)) // the server drops it then, unless a node acknowledged it first
	}
	// A client run under a trace (TRACEPARENT, as CI systems and agents set it) queues
	// its task in it: the session's span joins that trace.
	msg := &nats.Msg{Subject: subject, Data: data, Header: tracing.Carried(os.Getenv("TRACEPARENT"), os.Getenv("TRACESTATE"))}
	ack, err := c.js.PublishMsg(ctx, msg, opts...)
	if err == nil && ack.Duplicate {
		fmt.Fprintf(stderr, "agentmux %s: task %s was submitted already, within the last %v, and is not queued again%s; give the new one another --id\n",
			cmd, id, store.DuplicateWindow, c.fate(ctx, id))
		return exitError
	}
	if err != nil {
		if refused := c.explain(nil); refused != nil {
			fmt.Fprintf(stderr, "agentmux %s: %v\n", cmd, refused)
			return exitError
		}
		fmt.Fprintf(stderr, "agentmux %s: queue the task: %v; is `agentmux up` running with this manifest?\n", cmd, err)
		return exitError
	}
	return exitOK
}

// served reports whether a live node, not draining, runs host, from the heartbeats;
// true when they cannot be read (nothing to warn of then).
func (c *busClient) served(host string) bool {
	ctx, cancel := c.timeout(clientTimeout)
	defer cancel()
	nodes, err := store.OpenNodes(ctx, c.js)
	if err != nil {
		return true
	}
	list, now, err := nodes.List(ctx)
	if err != nil {
		return true
	}
	for _, n := range list {
		if n.Alive(now) && !n.Draining && slices.ContainsFunc(n.Hosts, func(h wire.HostInfo) bool { return h.Name == host }) {
			return true
		}
	}
	return false
}

// held says why host's tasks are held at its daily budget now, or "" when they are
// not (or it cannot tell).
func (c *busClient) held(host string) string {
	ctx, cancel := c.timeout(clientTimeout)
	defer cancel()
	fb, err := c.fleetBudget(ctx)
	if err != nil || fb.usd == 0 {
		return ""
	}
	days, err := store.ReadSpend(ctx, c.nc, time.Now())
	if err != nil {
		return ""
	}
	for _, d := range (fleetBudget{hosts: []string{host}, usd: fb.usd}).today(days, time.Now()) {
		if d.State == wire.DailyHeld {
			return fmt.Sprintf("%s has spent $%.2f of its $%.2f daily budget on %s (UTC); it waits in the queue until the next day, or until `agentmux budget raise --host %s --usd N` (or `budget reset`)",
				host, d.CostUSD-d.ReleasedUSD, d.LimitUSD, d.Day, host)
		}
	}
	return ""
}

// fate says what became of task id, from its audit: ended, running, or not yet taken.
func (c *busClient) fate(ctx context.Context, id string) string {
	records, err := store.ReadAudit(ctx, c.js, id)
	if err != nil {
		return ""
	}
	var started, ended *wire.AuditRecord
	for _, r := range records {
		switch r.Kind {
		case "session.started":
			started = r
		case "session.ended":
			ended = r
		}
	}
	at := func(r *wire.AuditRecord) string { return time.UnixMilli(r.Time).Format(time.RFC3339) }
	switch {
	case ended != nil:
		return fmt.Sprintf(" (it ended %s at %s on %s: `agentmux audit %s`)", ended.Outcome, at(ended), ended.Node, id)
	case started != nil:
		return fmt.Sprintf(" (it started at %s on %s and runs)", at(started), started.Node)
	}
	return " (it waits in the queue for a node that runs its host)"
}

func watch(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("watch", stdout, stderr)
	to := reachFlags(fs)
	subject := fs.String("subject", wire.AllEvents, "event `subject` filter")
	if _, err := parse(fs, args); err != nil {
		return usageError(stderr, err)
	}
	// A watch outlives node restarts: it reconnects for as long as it runs.
	c, code := to.client("watch", stderr, nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			fmt.Fprintf(stderr, "agentmux watch: disconnected (%v); reconnecting\n", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			fmt.Fprintf(stderr, "agentmux watch: reconnected to %s\n", nc.ConnectedUrlRedacted())
		}))
	if c == nil {
		return code
	}
	defer c.close()
	if _, err := c.follow([]string{*subject}, stdout); err != nil {
		fmt.Fprintln(stderr, "agentmux watch:", err)
		return exitError
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	closed := make(chan struct{})
	c.nc.SetClosedHandler(func(*nats.Conn) { close(closed) })
	select {
	case <-sigs:
	case <-closed:
		fmt.Fprintln(stderr, "agentmux watch: connection closed")
		return exitError
	}
	return exitOK
}
