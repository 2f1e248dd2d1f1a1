package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/node"
	"github.com/agentmux/agentmux/wire"
)

const endedEventWait = 2 * time.Second

func run(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("run", stdout, stderr)
	path := fs.String("c", "agentmux.toml", "manifest `file`")
	events := fs.Bool("events", false, "print each event as a JSON line on stderr")
	logLevel := fs.String("log", "warn", "log `level`: debug, info, warn, error")
	metricsAddr := fs.String("metrics", "-", "serve metrics on this `address` (\"-\": none)")
	resume := resumeFlag(fs)
	id := fs.String("id", "", "a pipeline run's `id` (default: a fresh one)")
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	m, code := loadManifest(*path, stderr)
	if m == nil {
		return code
	}
	if p, params, code, ok := pipelineArgs("run", pos, m, stderr); ok {
		if p == nil {
			return code
		}
		return runPipeline(m, p, params, *id, *events, *logLevel, *metricsAddr, stdout, stderr)
	}
	host, prompt, code := sessionArgs("run", pos, m, stderr)
	if code != exitOK {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	n, err := node.Start(ctx, node.Options{Manifest: m, Log: newLogger(stderr, *logLevel), Ephemeral: true, NoTasks: true, MetricsAddr: *metricsAddr})
	if err != nil {
		fmt.Fprintln(stderr, "agentmux run:", err)
		return exitError
	}
	defer func() { _ = n.Stop(context.Background()) }()

	session := wire.NewSessionID()
	var printer *eventPrinter
	if *events {
		printer, err = followEvents(n.Bus.Conn, []string{wire.SessionEvents(host, session)}, stderr)
		if err != nil {
			fmt.Fprintln(stderr, "agentmux run:", err)
			return exitError
		}
		defer printer.close()
	}
	reply := make(chan *node.Result, 1)
	n.SubmitSession(host, node.Session{ID: session, Prompt: prompt, Resume: *resume}, reply)
	var res *node.Result
	select {
	case res = <-reply:
	case <-ctx.Done():
		fmt.Fprintln(stderr, "agentmux run: interrupted")
		return exitError
	}
	if printer != nil {
		printer.waitEnded(n.Bus.Conn, endedEventWait)
	}
	return printResult(res, stdout, stderr)
}

func printResult(res *node.Result, stdout, stderr io.Writer) int {
	if !res.OK {
		fmt.Fprintf(stderr, "agentmux: session %s failed: %s\n", res.Session, res.Error)
		return exitError
	}
	fmt.Fprintln(stdout, string(res.Payload))
	return exitOK
}

// eventPrinter prints events of a subscription as JSON lines.
// With a pipeline run's subjects, ended waits for its pipeline.ended; otherwise for
// the session's session.ended.
type eventPrinter struct {
	subs     []*nats.Subscription
	pipeline bool
	ended    chan struct{}
	once     sync.Once
	started  chan struct{} // closed at the first event: a node took the task
	begun    sync.Once
	mu       sync.Mutex // protects w, last and run
	w        io.Writer
	last     *wire.SessionEnded
	run      *wire.PipelineRun
}

func followEvents(nc *nats.Conn, subjects []string, w io.Writer) (*eventPrinter, error) {
	p := &eventPrinter{ended: make(chan struct{}), started: make(chan struct{}), w: w, pipeline: len(subjects) > 1}
	for _, subject := range subjects {
		sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
			// Only what a node published: a reader of the bus may aim the server's
			// own messages at an event subject too (bus.CheckEvent).
			if bus.CheckEvent(m, subject) == nil {
				p.handle(m)
			}
		})
		if err != nil {
			return nil, fmt.Errorf("subscribe to events: %w", err)
		}
		if err := sub.SetPendingLimits(-1, -1); err != nil {
			return nil, err
		}
		p.subs = append(p.subs, sub)
	}
	return p, nc.Flush()
}

func (p *eventPrinter) handle(m *nats.Msg) {
	line, _ := json.Marshal(struct {
		Subject string          `json:"subject"`
		Session string          `json:"session"`
		Data    json.RawMessage `json:"data"`
	}{m.Subject, session(m.Subject), rawOrString(m.Data)})
	p.mu.Lock()
	fmt.Fprintln(p.w, string(line))
	p.mu.Unlock()
	p.begun.Do(func() { close(p.started) })
	switch {
	case p.pipeline && strings.HasSuffix(m.Subject, "."+wire.EventPipelineEnded):
		var run wire.PipelineRun
		if json.Unmarshal(m.Data, &run) == nil {
			p.mu.Lock()
			p.run = &run
			p.mu.Unlock()
			p.once.Do(func() { close(p.ended) })
		}
	case !p.pipeline && strings.HasSuffix(m.Subject, "."+wire.EventSessionEnded):
		var e wire.SessionEnded
		if json.Unmarshal(m.Data, &e) == nil {
			p.mu.Lock()
			p.last = &e
			p.mu.Unlock()
		}
		p.once.Do(func() { close(p.ended) })
	}
}

func rawOrString(b []byte) json.RawMessage {
	if json.Valid(b) {
		return b
	}
	s, _ := json.Marshal(string(b))
	return s
}

// waitEnded waits, up to d, for the session.ended event to be printed.
func (p *eventPrinter) waitEnded(nc *nats.Conn, d time.Duration) {
	_ = nc.FlushTimeout(d) // best effort: events are at most once
	select {
	case <-p.ended:
	case <-time.After(d):
	}
}

// await waits for the end the printer follows, or for a signal to stop following
// (then it says that what it followed goes on, and returns false).
func (p *eventPrinter) await(what string, timeout, ttl time.Duration, stderr io.Writer) bool {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	var expired, dropped <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	if ttl > 0 {
		// The queue drops the task at its TTL unless a node has started it by then; a
		// second more lets the start's event arrive.
		t := time.NewTimer(ttl + time.Second)
		defer t.Stop()
		dropped = t.C
	}
	for {
		select {
		case <-p.ended:
			return true
		case <-sigs:
			fmt.Fprintf(stderr, "agentmux submit: stopped following; the %s goes on\n", what)
		case <-expired:
			fmt.Fprintf(stderr, "agentmux submit: the %s did not end within --timeout %v; it goes on\n", what, timeout)
		case <-dropped:
			select {
			case <-p.started:
				dropped = nil
				continue
			default:
			}
			fmt.Fprintf(stderr, "agentmux submit: no node started the %s within --ttl %v: the work queue dropped it\n", what, ttl)
		}
		return false
	}
}

func (p *eventPrinter) close() {
	for _, sub := range p.subs {
		_ = sub.Unsubscribe() // the connection closes next
	}
}

func session(subject string) string {
	_, s, _, _ := wire.ParseEventSubject(subject)
	return s
}

// resumeFlag is run's and submit's --resume.
func resumeFlag(fs *flag.FlagSet) *string {
	return fs.String("resume", "", "continue the agent's earlier conversation: its session `id` from a result, or \"last\" (Claude Code)")
}
