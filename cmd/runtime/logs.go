package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// logsPoll is how often `logs -f` reads the history again for what is new.
const logsPoll = 250 * time.Millisecond

// logs prints a session's events from the history: a finished session's, after a
// restart too, and with -f a running one's as they come, until it ends.
func logs(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("logs", stdout, stderr)
	to := reachFlags(fs)
	follow := fs.Bool("f", false, "follow: print new events as they come until the session ends (a session not started yet is waited for)")
	out := newOutputFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	form, err := out.form()
	if err != nil {
		return usageError(stderr, err)
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "agentmux logs: want a session id (or the start of one): logs -c <manifest> <session> [-f]")
		return exitUsage
	}
	c, code := to.client("logs", stderr)
	if c == nil {
		return code
	}
	defer c.close()
	ctx, stop := signal.NotifyContext(c.ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	rctx, cancel := context.WithTimeout(ctx, clientTimeout)
	id, err := historySession(rctx, c, pos[0], *follow)
	cancel()
	if err != nil {
		fmt.Fprintln(stderr, "agentmux logs:", c.explain(err))
		return exitError
	}
	var next uint64
	ended := false
	show := func(e store.SessionEvent) error {
		next, ended = e.Seq+1, ended || e.Type == wire.EventSessionEnded
		return printEvent(stdout, e, form)
	}
	for {
		// No deadline over the whole history, which may hold 200,000 events: each page
		// of it has its own.
		err := store.Events(ctx, c.nc, id, next, show)
		switch {
		case ctx.Err() != nil:
			return exitOK // stopped following
		case err != nil:
			fmt.Fprintln(stderr, "agentmux logs:", c.explain(err))
			return exitError
		case !*follow || ended:
			return exitOK
		}
		select {
		case <-ctx.Done():
			return exitOK
		case <-time.After(logsPoll):
		}
	}
}

// historySession is the session of the history id names: its whole id, or the start of
// one session's only. Following, a whole id with no events yet is a session to wait for.
func historySession(ctx context.Context, c *busClient, id string, follow bool) (string, error) {
	if found, err := store.HasEvents(ctx, c.nc, id); err == nil && found {
		return id, nil
	}
	ids, err := store.EventSessions(ctx, c.js, id)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return "", errors.New("this fleet keeps no history of events ([audit] keep_events = false); `agentmux audit` has what its sessions were asked and answered")
	}
	if err != nil {
		return "", err
	}
	found, err := byPrefix(ids, id, "sessions'")
	switch {
	case err != nil:
		return "", err
	case found != "":
		return found, nil
	case follow:
		return id, nil
	}
	return "", fmt.Errorf("the history holds no events of session %q, nor of one whose id starts with it (it keeps them for [audit] events_max_age)", id)
}

// printEvent prints one event: a line of time, type and data, or a JSON object.
func printEvent(w io.Writer, e store.SessionEvent, form string) error {
	data := rawOrString(e.Data)
	if form == outJSON {
		line, _ := json.Marshal(struct {
			store.SessionEvent
			Data json.RawMessage `json:"data"`
		}{e, data})
		_, err := fmt.Fprintln(w, string(line))
		return err
	}
	text := string(data)
	if form != outWide {
		text = oneLine(text, 160)
	}
	_, err := fmt.Fprintf(w, "%s  %-18s %s\n", e.Time.Local().Format("15:04:05.000"), e.Type, text)
	return err
}
