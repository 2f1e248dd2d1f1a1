package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/decide"
	"github.com/agentmux/agentmux/protocol"
)

const clientTimeout = 10 * time.Second

// client connects a CLI command to the node's NATS that the manifest at path names.
func client(cmd, path string, stderr io.Writer) (*nats.Conn, jetstream.JetStream, int) {
	m, code := loadManifest(path, stderr)
	if m == nil {
		return nil, nil, code
	}
	nc, err := bus.Connect(clientURL(m), m.NATS.Credentials, "agentmux-"+cmd)
	if err != nil {
		fmt.Fprintf(stderr, "runtime %s: %v\n", cmd, err)
		return nil, nil, exitError
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		fmt.Fprintf(stderr, "runtime %s: %v\n", cmd, err)
		return nil, nil, exitError
	}
	return nc, js, exitOK
}

// pendingClient opens the pending-request store of the node the manifest names; done
// closes the connection.
func pendingClient(ctx context.Context, cmd, path string, stderr io.Writer) (*bus.PendingStore, func(), int) {
	nc, js, code := client(cmd, path, stderr)
	if nc == nil {
		return nil, nil, code
	}
	store, err := bus.OpenPending(ctx, js, nc)
	if err != nil {
		nc.Close()
		fmt.Fprintf(stderr, "runtime %s: %v\n", cmd, err)
		return nil, nil, exitError
	}
	return store, nc.Close, exitOK
}

func pending(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("pending", stderr)
	path := fs.String("c", "agentmux.toml", "manifest `file`")
	asJSON := fs.Bool("json", false, "print JSON lines instead of a table")
	if _, err := parse(fs, args); err != nil {
		return usageError(stderr, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	store, done, code := pendingClient(ctx, "pending", *path, stderr)
	if store == nil {
		return code
	}
	defer done()
	list, err := store.List(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "runtime pending:", err)
		return exitError
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for _, p := range list {
			_ = enc.Encode(p)
		}
		return exitOK
	}
	if len(list) == 0 {
		fmt.Fprintln(stdout, "nothing is waiting for a person")
		return exitOK
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tSUPERVISOR\tHOST\tSESSION\tAGE\tDEADLINE IN\tREQUEST\tOPTIONS")
	now := time.Now()
	for _, p := range list {
		text := p.Type + ": " + p.Text
		if p.Suggestion != nil {
			text += fmt.Sprintf(" (suggested: %s)", p.Suggestion)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.ID, p.Supervisor, p.Host, p.Session,
			now.Sub(p.Created).Round(time.Second), p.Deadline.Sub(now).Round(time.Second), oneLine(text, 80), strings.Join(p.Options, "|"))
	}
	_ = w.Flush()
	return exitOK
}

func respond(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("respond", stderr)
	path := fs.String("c", "agentmux.toml", "manifest `file`")
	as := fs.String("as", os.Getenv("USER"), "`name` recorded as who answered")
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	if len(pos) != 2 {
		fmt.Fprintln(stderr, `runtime respond: want an id and an answer: respond -c <manifest> <id> <answer>; the answer is JSON (true, ["a","b"], {"k":1}) or else a string`)
		return exitUsage
	}
	if *as == "" {
		*as = "operator"
	}
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	store, done, code := pendingClient(ctx, "respond", *path, stderr)
	if store == nil {
		return code
	}
	defer done()
	value := json.RawMessage(pos[1])
	if !json.Valid(value) {
		value, _ = json.Marshal(pos[1])
	}
	// Check the answer's shape here, where the person can still fix it.
	if p, _, err := store.Get(ctx, pos[0]); err == nil {
		r := &decide.Request{Type: p.Type, Text: p.Text, Request: p.Body}
		if err := protocol.ValidateAnswer(r.Message(), value); err != nil {
			fmt.Fprintf(stderr, "runtime respond: %s does not fit %s: %v\n", value, pos[0], err)
			return exitUsage
		}
	}
	p, err := store.Respond(ctx, pos[0], value, *as)
	if err != nil {
		fmt.Fprintln(stderr, "runtime respond:", err)
		if errors.Is(err, bus.ErrNoSuchPending) {
			return exitUsage
		}
		return exitError
	}
	fmt.Fprintf(stdout, "answered %s (%s %s of session %s) with %s as %s\n", p.ID, p.Type, p.Request, p.Session, value, *as)
	return exitOK
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n-1] + "…"
	}
	return s
}
