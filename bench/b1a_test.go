package bench

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// tally counts what is published on the event and audit subjects: events by type,
// audit records by kind, and the bytes of both (subjects and bodies) but for the
// records of requests written alone, whose number depends on how fast answers come.
type tally struct {
	mu     sync.Mutex
	events map[string]int
	audit  map[string]int
	bytes  int
}

func (t *tally) subscribe(tb testing.TB, nc *nats.Conn) {
	tb.Helper()
	t.events, t.audit = map[string]int{}, map[string]int{}
	for _, subject := range []string{wire.AllEvents, wire.AuditSubjects} {
		sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
			t.mu.Lock()
			defer t.mu.Unlock()
			if _, _, typ, ok := wire.ParseEventSubject(m.Subject); ok {
				t.events[typ]++
				t.bytes += len(m.Subject) + len(m.Data)
				return
			}
			var rec struct{ Kind string }
			if err := json.Unmarshal(m.Data, &rec); err != nil {
				tb.Errorf("an audit record that is not JSON: %.200s", m.Data)
			}
			t.audit[rec.Kind]++
			if rec.Kind != "request" {
				t.bytes += len(m.Subject) + len(m.Data)
			}
		})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = sub.Unsubscribe() })
	}
	if err := nc.Flush(); err != nil {
		tb.Fatal(err)
	}
}

func (t *tally) counts() (events, audit map[string]int, bytes int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.events), maps.Clone(t.audit), t.bytes
}

// B1a is the floor that does agentmux's work: for the same sessions it publishes the
// same events, of the same types, for the history stream to keep, and as many audit
// records, of about as many bytes. A B1a that wrote less would flatter the ratios
// against it.
func TestB1aWritesWhatANodeWrites(t *testing.T) {
	c := small(AgentInProc)
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)

	n, err := c.startNode(ctx, log)
	if err != nil {
		t.Fatal(err)
	}
	var node tally
	node.subscribe(t, n.Bus.Conn)
	if _, err := runOn(ctx, &c, "agentmux", n, func() { stopNodes(n) }, noProgress); err != nil {
		t.Fatal(err)
	}

	u := newBusUser()
	b, err := bus.Open(bus.Config{Listen: "127.0.0.1:0", Users: []bus.User{u.User}, Identity: u.identity()}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := store.Declare(ctx, b.JS, 0, store.Keep{}, log); err != nil {
		t.Fatal(err)
	}
	var floor tally
	floor.subscribe(t, b.Conn)
	decide := newDecisions()
	s, err := runB1aDeciding(ctx, &c, b, decide, log, noProgress)
	if err != nil {
		t.Fatal(err)
	}
	checkSystem(t, s, c, true)
	if err := b.Conn.Flush(); err != nil {
		t.Fatal(err)
	}

	nodeEvents, nodeAudit, nodeBytes := node.counts()
	floorEvents, floorAudit, floorBytes := floor.counts()
	// Lines outside a session (an agent's init) go on session "_": B1a has no such
	// lines, as its agents are not pooled.
	perSession := c.Progress + c.Questions + c.Approvals + c.Unrouted
	for _, typ := range []string{"progress", "question", "approval", "result", wire.EventSessionStarted, wire.EventRequestAnswered, wire.EventSessionEnded} {
		if nodeEvents[typ] == 0 || nodeEvents[typ] != floorEvents[typ] {
			t.Errorf("%s events: the node published %d, B1a %d; want the same, and some", typ, nodeEvents[typ], floorEvents[typ])
		}
	}
	if got := floorEvents["progress"] + floorEvents["question"] + floorEvents["approval"]; got != c.Sessions*perSession {
		t.Errorf("B1a published %d of its agents' progress and request lines; want %d", got, c.Sessions*perSession)
	}
	// A session's start and end and a record per answer, each; and a request's record
	// of its own for each unrouted question, whose answer comes at its timeout, later
	// than a node holds a request's record for its answer to stand for both. A node
	// writes one for any other request answered that late too, which a busy machine
	// makes happen: it writes at least as many.
	for kind, want := range map[string]int{"session.started": c.Sessions, "answer": c.Sessions * (c.Questions + c.Approvals + c.Unrouted), "session.ended": c.Sessions} {
		if nodeAudit[kind] != want || floorAudit[kind] != want {
			t.Errorf("%s records: the node published %d, B1a %d; want %d each", kind, nodeAudit[kind], floorAudit[kind], want)
		}
	}
	if want := c.Sessions * c.Unrouted; floorAudit["request"] != want || nodeAudit["request"] < want {
		t.Errorf("requests' records of their own: the node published %d, B1a %d; want %d from B1a, and at least as many from the node", nodeAudit["request"], floorAudit["request"], want)
	}
	if want := c.Sessions * (2 + c.Questions + c.Approvals + 2*c.Unrouted); s.Durable != int64(want) {
		t.Errorf("B1a's stream holds %d records; want %d", s.Durable, want)
	}
	// The same records of the same sessions, named alike: about as many bytes (the node's
	// reasons and names differ a little).
	if float64(floorBytes) < 0.9*float64(nodeBytes) || float64(floorBytes) > 1.1*float64(nodeBytes) {
		t.Errorf("B1a published %d bytes of events and records, the node %d; want them within 10%%", floorBytes, nodeBytes)
	}
	// What it does with them: each request counted by type and outcome, as the node
	// counts it; each routed one decided by its supervisor; each unrouted one asked of
	// its route's, whom nobody runs.
	for _, k := range []struct {
		typ  protocol.Type
		out  protocol.Outcome
		want int
	}{
		{protocol.TypeQuestion, protocol.OutcomeAnswered, c.Sessions * c.Questions},
		{protocol.TypeApproval, protocol.OutcomeAnswered, c.Sessions * c.Approvals},
		{protocol.TypeQuestion, protocol.OutcomeTimedOut, c.Sessions * c.Unrouted},
	} {
		got := testutil.ToFloat64(decide.requests.WithLabelValues(string(k.typ), string(k.out)))
		byNode := testutil.ToFloat64(n.Metrics.Requests.WithLabelValues(loadHost, string(k.typ), string(k.out)))
		if int(got) != k.want || int(byNode) != k.want {
			t.Errorf("%s requests %s: B1a counted %v, the node %v; want %d each", k.typ, k.out, got, byNode, k.want)
		}
	}
	if got, want := testutil.ToFloat64(decide.decided.WithLabelValues("decided")), c.Sessions*(c.Questions+c.Approvals); int(got) != want {
		t.Errorf("B1a's supervisor decided %v requests; want %d", got, want)
	}
	noResponders := testutil.ToFloat64(decide.asks.WithLabelValues("no_responders"))
	byNode := testutil.ToFloat64(n.Metrics.AskRequests.WithLabelValues("no_responders"))
	if want := c.Sessions * c.Unrouted; int(noResponders) != want || int(byNode) < want {
		t.Errorf("asks that found no supervisor: B1a's %v, the node's %v; want %d from B1a, and at least as many from the node", noResponders, byNode, want)
	}
	if t.Failed() {
		t.Logf("node: %v\nB1a:  %v", nodeEvents, floorEvents)
	}
}

// B1a checks each answer against its request, as a node does: its supervisor's rule
// answers "unit" to any question, which an approval, or a question that offers other
// choices, does not take.
func TestB1aChecksEachAnswer(t *testing.T) {
	d := newDecisions()
	for _, tc := range []struct {
		line, answer string
		want         protocol.Outcome
	}{
		{`{"type":"question","id":"q1","question":"which?"}`, `"unit"`, protocol.OutcomeAnswered},
		{`{"type":"question","id":"q2","question":"which?","kind":"select","options":["a","b"]}`, `"unit"`, protocol.OutcomeInvalid},
		{`{"type":"approval","id":"a1","description":"rm -rf build"}`, `"yes"`, protocol.OutcomeAnswered},
		{`{"type":"approval","id":"a2","description":"rm -rf build"}`, `"unit"`, protocol.OutcomeInvalid},
		{`{"type":"approval","id":"a3","description":"rm -rf build"}`, ``, protocol.OutcomeInvalid},
	} {
		m, err := protocol.Decode([]byte(tc.line), protocol.PlainTextResult)
		if err != nil {
			t.Fatal(err)
		}
		value, outcome, reason := d.check(m, json.RawMessage(tc.answer), json.RawMessage(`"no"`))
		if outcome != tc.want {
			t.Errorf("%s answered %s: outcome %s (%s); want %s", tc.line, tc.answer, outcome, reason, tc.want)
		}
		if outcome == protocol.OutcomeInvalid && (string(value) != `"no"` || reason == "") {
			t.Errorf("%s answered %s: wrote %s because %q; want the default, and why", tc.line, tc.answer, value, reason)
		}
	}
}
