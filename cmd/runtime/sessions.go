package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// liveSession is a session a live node runs or has queued.
type liveSession struct {
	wire.SessionInfo
	Node string `json:"node"`
	// Paused is why and until when a paused session waits (no node runs it: Node is
	// where it paused).
	Paused *wire.PausedSession `json:"paused,omitempty"`
}

// stateInWords is s's state in words: a paused one's till when and why.
func stateInWords(s liveSession) string {
	if s.Paused == nil || s.State != "paused" {
		return s.State
	}
	return fmt.Sprintf("paused until %s (%s)", time.UnixMilli(s.Paused.Until).UTC().Format(time.RFC3339), s.Paused.Reason)
}

// fleetSessions asks every live node for its sessions, all at once. Nodes that did not
// answer are returned by name, with why.
func fleetSessions(ctx context.Context, c *busClient) ([]liveSession, map[string]error, error) {
	out, silent, err := askLiveNodes(ctx, c, "", func(node string) ([]liveSession, error) {
		msg, err := c.nc.RequestWithContext(ctx, wire.CtlSubject(node, "list"), nil)
		if err != nil {
			return nil, err
		}
		var infos []wire.SessionInfo
		if err := json.Unmarshal(msg.Data, &infos); err != nil {
			return nil, err
		}
		out := make([]liveSession, 0, len(infos))
		for _, s := range infos {
			out = append(out, liveSession{SessionInfo: s, Node: node})
		}
		return out, nil
	})
	slices.SortFunc(out, func(a, b liveSession) int {
		return cmp.Or(cmp.Compare(b.AgeMS, a.AgeMS), strings.Compare(a.Session, b.Session)) // oldest first
	})
	return out, silent, err
}

// askLiveNodes asks every live node (or only the one named) with ask, all at once, and
// gathers what they answer. Nodes that did not answer are returned by name, with why.
func askLiveNodes[T any](ctx context.Context, c *busClient, only string, ask func(node string) ([]T, error)) ([]T, map[string]error, error) {
	nodes, err := store.OpenNodes(ctx, c.js)
	if err != nil {
		return nil, nil, err
	}
	list, now, err := nodes.List(ctx)
	if err != nil {
		return nil, nil, err
	}
	var (
		mu     sync.Mutex
		out    []T
		silent = map[string]error{}
		wg     sync.WaitGroup
	)
	for _, n := range list {
		if !n.Alive(now) || (only != "" && n.Name != only) {
			continue
		}
		wg.Go(func() {
			got, err := ask(n.Name)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				silent[n.Name] = err
				return
			}
			out = append(out, got...)
		})
	}
	wg.Wait()
	return out, silent, nil
}

// resolveSession finds the live session whose id is id, or starts with it when no id
// is: a prefix must name one session, or the error lists those it could be.
func resolveSession(sessions []liveSession, id string) (liveSession, error) {
	ids := make([]string, len(sessions))
	for i, s := range sessions {
		ids[i] = s.Session
	}
	found, err := byPrefix(ids, id, "sessions'")
	switch {
	case err != nil:
		return liveSession{}, err
	case found == "":
		return liveSession{}, fmt.Errorf("no running or queued session is %q or starts with it; `agentmux sessions` lists them", id)
	}
	return sessions[slices.IndexFunc(sessions, func(s liveSession) bool { return s.Session == found })], nil
}

// sessions lists the sessions the fleet's live nodes run or have queued.
func sessions(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("sessions", stdout, stderr)
	to := reachFlags(fs)
	host := fs.String("host", "", "only this `host`'s sessions")
	node := fs.String("node", "", "only the sessions of this `node`")
	state := fs.String("state", "", "only sessions in this `state`: running, queued, paused, or ended (from the audit: ended within --since, 1h unless given)")
	sinceFlag := fs.String("since", "", "only sessions asked for (ended, with --state ended) since this `time`: a duration before now (10m, 1d) or an RFC 3339 time")
	out := newOutputFlags(fs)
	if _, err := parse(fs, args); err != nil {
		return usageError(stderr, err)
	}
	form, err := out.form()
	if err == nil && *state != "" && *state != "running" && *state != "queued" && *state != "paused" && *state != "ended" {
		err = fmt.Errorf("--state %q: want running, queued, paused or ended", *state)
	}
	var since time.Duration // 0: no bound
	if from, perr := store.ParseTimeBound(*sinceFlag, time.Now()); err == nil && perr != nil {
		err = fmt.Errorf("--since %w", perr)
	} else if !from.IsZero() {
		since = max(time.Since(from), time.Millisecond)
	}
	if err != nil {
		return usageError(stderr, err)
	}
	c, code := to.client("sessions", stderr)
	if c == nil {
		return code
	}
	defer c.close()
	ctx, cancel := c.timeout(clientTimeout)
	defer cancel()
	if *state == "ended" {
		return endedSessions(c, *host, *node, since, form, stdout, stderr)
	}
	all, silent, err := fleetSessions(ctx, c)
	var paused []liveSession
	if err == nil {
		paused, err = pausedSessions(ctx, c)
	}
	if err != nil {
		fmt.Fprintln(stderr, "agentmux sessions:", c.explain(err))
		return exitError
	}
	all = append(all, paused...)
	// A node that did not answer makes the listing partial: it is printed, and the exit
	// code says it is not the whole fleet's.
	done := exitOK
	for name, why := range silent {
		fmt.Fprintf(stderr, "agentmux sessions: node %s did not answer (%v); its sessions are not listed\n", name, c.explain(why))
		done = exitError
	}
	var list []liveSession
	for _, s := range all {
		if (*host == "" || s.Host == *host) && (*node == "" || s.Node == *node) && (*state == "" || s.State == *state) &&
			(since == 0 || time.Duration(s.AgeMS)*time.Millisecond <= since) {
			list = append(list, s)
		}
	}
	if form == outJSON {
		return max(jsonLines(stdout, list), done)
	}
	if len(list) == 0 {
		fmt.Fprintln(stdout, "no session is running, queued or paused")
		return done
	}
	header := []string{"SESSION", "HOST", "NODE", "STATE", "AGE"}
	if form == outWide {
		header = append(header, "TASK", "ATTEMPT")
	}
	rows := make([][]string, 0, len(list))
	for _, s := range list {
		row := []string{s.Session, s.Host, s.Node, stateInWords(s), (time.Duration(s.AgeMS) * time.Millisecond).Round(time.Second).String()}
		if form == outWide {
			row = append(row, dash(s.Task), strconv.Itoa(s.Attempt))
		}
		rows = append(rows, row)
	}
	return max(table(stdout, header, rows), done)
}

// endedSessions lists the sessions whose end the audit recorded within since (1h when
// 0): each attempt's end, with how it ended, on which node, after how long.
func endedSessions(c *busClient, host, node string, since time.Duration, form string, stdout, stderr io.Writer) int {
	if since == 0 {
		since = time.Hour
	}
	ctx, cancel := c.timeout(searchTimeout)
	defer cancel()
	var ended []*wire.AuditRecord
	q := store.AuditQuery{Host: host, Kind: "session.ended", Since: time.Now().Add(-since)}
	err := store.SearchAudit(ctx, c.nc, q, func(r *wire.AuditRecord) error {
		if node == "" || r.Node == node {
			ended = append(ended, r)
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(stderr, "agentmux sessions:", c.explain(err))
		return exitError
	}
	if form == outJSON {
		return jsonLines(stdout, ended)
	}
	if len(ended) == 0 {
		fmt.Fprintf(stdout, "no session ended within %v\n", since)
		return exitOK
	}
	header := []string{"SESSION", "HOST", "NODE", "STATE", "ENDED", "DURATION", "COST"}
	if form == outWide {
		header = append(header, "TOKENS", "ATTEMPT", "ERROR")
	}
	rows := make([][]string, 0, len(ended))
	for _, r := range ended {
		row := []string{r.Session, r.Host, r.Node, "ended " + r.Outcome, time.Since(time.UnixMilli(r.Time)).Round(time.Second).String() + " ago",
			(time.Duration(r.Duration) * time.Millisecond).Round(100 * time.Millisecond).String(), cost(r.Spend)}
		if form == outWide {
			tokens := "-"
			if r.Spend != nil {
				tokens = strconv.FormatInt(r.Spend.Tokens(), 10)
			}
			row = append(row, tokens, strconv.Itoa(r.Attempt), dash(oneLine(r.Error, 120)))
		}
		rows = append(rows, row)
	}
	return table(stdout, header, rows)
}

// interrupt asks a session's agent to stop its current work early.
func interrupt(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("interrupt", stdout, stderr)
	to := reachFlags(fs)
	reason := fs.String("reason", "interrupted by an operator", "why, as the agent is told")
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "agentmux interrupt: want a session id (or the start of one): interrupt -c <manifest> <session> [--reason why]")
		return exitUsage
	}
	return steer("interrupt", to, pos[0], *reason, stdout, stderr)
}

// message sends a running session's agent a message mid-session.
func message(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("message", stdout, stderr)
	to := reachFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	if len(pos) != 2 {
		fmt.Fprintln(stderr, `agentmux message: want a session id (or the start of one) and the text: message -c <manifest> <session> "<text>"`)
		return exitUsage
	}
	return steer("message", to, pos[0], pos[1], stdout, stderr)
}

// steer sends verb (interrupt or message) with text to the node that runs the session
// id names, and prints what the agent did.
func steer(verb string, to *reach, id, text string, stdout, stderr io.Writer) int {
	c, code := to.client(verb, stderr)
	if c == nil {
		return code
	}
	defer c.close()
	ctx, cancel := c.timeout(clientTimeout)
	defer cancel()
	all, _, err := fleetSessions(ctx, c)
	if err != nil {
		fmt.Fprintf(stderr, "agentmux %s: %v\n", verb, c.explain(err))
		return exitError
	}
	s, err := resolveSession(all, id)
	if err != nil {
		fmt.Fprintf(stderr, "agentmux %s: %v\n", verb, err)
		return exitError
	}
	return steerWith(ctx, c, verb, s, text, stdout, stderr)
}

// steerWith sends verb with text to the node running s, and prints what it did.
func steerWith(ctx context.Context, c *busClient, verb string, s liveSession, text string, stdout, stderr io.Writer) int {
	effect, err := ctl(ctx, c, s.Node, verb, map[string]string{"session": s.Session, "text": text})
	if err != nil {
		fmt.Fprintf(stderr, "agentmux %s: session %s on %s: %v\n", verb, s.Session, s.Node, err)
		return exitError
	}
	fmt.Fprintf(stdout, "%s on %s: %s\n", s.Session, s.Node, effect)
	return exitOK
}

// ctl sends node the control request verb with req (nil: none) as JSON, and returns what
// it did: the reply's effect, or its error (a node that did not answer, or said no).
func ctl(ctx context.Context, c *busClient, node, verb string, req any) (string, error) {
	var data []byte
	if req != nil {
		data, _ = json.Marshal(req)
	}
	msg, err := c.nc.RequestWithContext(ctx, wire.CtlSubject(node, verb), data)
	if err != nil {
		return "", fmt.Errorf("node %s did not answer: %w; `agentmux nodes` lists the live ones", node, c.explain(err))
	}
	var reply struct {
		OK     bool   `json:"ok"`
		Effect string `json:"effect"`
		Error  string `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		return "", fmt.Errorf("node %s answered %q, which is not a control reply", node, msg.Data)
	}
	if !reply.OK {
		return "", errors.New(cmp.Or(reply.Error, reply.Effect, "refused"))
	}
	return reply.Effect, nil
}

// cancel ends a running or queued session for good, or takes a task that waits in the
// work queue out of it.
func cancel(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("cancel", stdout, stderr)
	to := reachFlags(fs)
	reason := fs.String("reason", "", "why, for the session's error and its audit")
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "agentmux cancel: want a session or task id (or the start of one): cancel -c <manifest> <id> [--reason why]")
		return exitUsage
	}
	c, code := to.client("cancel", stderr)
	if c == nil {
		return code
	}
	defer c.close()
	who, err := responder(c, "")
	if err != nil {
		fmt.Fprintln(stderr, "agentmux cancel:", err)
		return exitUsage
	}
	why := "by " + who
	if *reason != "" {
		why += ": " + *reason
	}
	ctx, cancelCtx := c.timeout(clientTimeout)
	defer cancelCtx()
	live, _, err := fleetSessions(ctx, c)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux cancel:", c.explain(err))
		return exitError
	}
	if s, err := resolveSession(live, pos[0]); err == nil {
		return steerWith(ctx, c, "cancel", s, why, stdout, stderr)
	}
	// Not on a node: a task that waits in the work queue.
	queued, err := store.ReadTasks(ctx, c.nc)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux cancel:", c.explain(err))
		return exitError
	}
	ids := make([]string, len(queued))
	for i, t := range queued {
		ids[i] = t.ID
	}
	found, err := byPrefix(ids, pos[0], "queued tasks'")
	switch {
	case err != nil:
		fmt.Fprintln(stderr, "agentmux cancel:", err)
		return exitError
	case found == "":
		fmt.Fprintf(stderr, "agentmux cancel: no running or queued session, and no task in the work queue, is %q or starts with it; `agentmux sessions` and `agentmux tasks` list them\n", pos[0])
		return exitError
	}
	t := queued[slices.IndexFunc(queued, func(t store.QueuedTask) bool { return t.ID == found })]
	if err := store.RemoveTask(ctx, c.js, t.Seq); err != nil {
		fmt.Fprintln(stderr, "agentmux cancel:", c.explain(err))
		return exitError
	}
	// A node may have taken it as it was removed: then it runs, and is cancelled there.
	if live, _, err := fleetSessions(ctx, c); err == nil {
		if s, err := resolveSession(live, t.ID); err == nil && s.Session == t.ID {
			return steerWith(ctx, c, "cancel", s, why, stdout, stderr)
		}
	}
	fmt.Fprintf(stdout, "%s: taken out of the work queue of %s; no node had started it\n", t.ID, t.Queue)
	return exitOK
}

// cost is what a session's model calls cost, in dollars: "-" when its agent reported
// none, and marked "+" when some of its models are unpriced (more than shown).
func cost(s *wire.Spend) string {
	if s == nil {
		return "-"
	}
	out := fmt.Sprintf("$%.4f", s.CostUSD)
	if len(s.Unpriced) > 0 {
		out += "+"
	}
	return out
}
