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
	"github.com/nats-io/nuid"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/node"
)

const endedEventWait = 2 * time.Second

func run(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("run", stderr)
	path := fs.String("c", "agentmux.toml", "manifest `file`")
	events := fs.Bool("events", false, "print each event as a JSON line on stderr")
	logLevel := fs.String("log", "warn", "log `level`: debug, info, warn, error")
	metricsAddr := fs.String("metrics", "-", "serve metrics on this `address` (\"-\": none)")
	resume := resumeFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	m, host, prompt, code := sessionArgs("run", pos, *path, stderr)
	if m == nil {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	n, err := node.Start(ctx, node.Options{Manifest: m, Log: newLogger(stderr, *logLevel), Ephemeral: true, NoTasks: true, MetricsAddr: *metricsAddr})
	if err != nil {
		fmt.Fprintln(stderr, "runtime run:", err)
		return exitError
	}
	defer func() { _ = n.Stop(context.Background()) }()

	session := "s-" + nuid.Next()
	var printer *eventPrinter
	if *events {
		printer, err = followEvents(n.Bus.Conn, bus.SessionEvents(host, session), stderr)
		if err != nil {
			fmt.Fprintln(stderr, "runtime run:", err)
			return exitError
		}
		defer printer.close()
	}
	reply := make(chan *agent.Result, 1)
	n.SubmitSession(host, &agent.StartSession{Session: session, Prompt: prompt, Resume: *resume, Reply: reply})
	var res *agent.Result
	select {
	case res = <-reply:
	case <-ctx.Done():
		fmt.Fprintln(stderr, "runtime run: interrupted")
		return exitError
	}
	if printer != nil {
		printer.waitEnded(n.Bus.Conn, endedEventWait)
	}
	return printResult(res, stdout, stderr)
}

func printResult(res *agent.Result, stdout, stderr io.Writer) int {
	if !res.OK {
		fmt.Fprintf(stderr, "runtime: session %s failed: %s\n", res.Session, res.Error)
		return exitError
	}
	fmt.Fprintln(stdout, string(res.Payload))
	return exitOK
}

// eventPrinter prints events of a subscription as JSON lines.
type eventPrinter struct {
	sub   *nats.Subscription
	ended chan struct{}
	once  sync.Once
	mu    sync.Mutex // protects w
	w     io.Writer
	last  *bus.SessionEnded
}

func followEvents(nc *nats.Conn, subject string, w io.Writer) (*eventPrinter, error) {
	p := &eventPrinter{ended: make(chan struct{}), w: w}
	sub, err := nc.Subscribe(subject, p.handle)
	if err != nil {
		return nil, fmt.Errorf("subscribe to events: %w", err)
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		return nil, err
	}
	p.sub = sub
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
	if strings.HasSuffix(m.Subject, "."+agent.EventSessionEnded) {
		var e bus.SessionEnded
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

func (p *eventPrinter) close() {
	_ = p.sub.Unsubscribe() // the connection closes next
}

func session(subject string) string {
	_, s, _, _ := bus.ParseEventSubject(subject)
	return s
}

// resumeFlag is run's and submit's --resume.
func resumeFlag(fs *flag.FlagSet) *string {
	return fs.String("resume", "", "continue the agent's earlier conversation: its session `id` from a result, or \"last\" (Claude Code)")
}
