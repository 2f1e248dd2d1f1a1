package node

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A request answered within the audit's hold is written once, as its answer carrying
// the request (when it was read, and its text); one answered later has its request
// record and its answer record, in that order.
func TestAuditWritesAPromptAnswerAsTheRequestsOneRecord(t *testing.T) {
	f := start(t, simHost("w", "")+`
[supervisors.fast]
strategy = "static"
answers = { question = "now" }
[supervisors.slow]
strategy = "external"
[[routes]]
match = "slow"
supervisor = "slow"
[[routes]]
supervisor = "fast"
`)
	answerer(t, f.n.Bus.Conn, "slow", func(_ *wire.Ask, m *nats.Msg) {
		time.AfterFunc(4*auditHold, func() { reply(t, m, `"later"`) })
	})
	res := f.run("w", script(send(`{"type":"question","id":"q1","question":"Which one?"}`), await("q1"),
		send(`{"type":"question","id":"q2","question":"A slow one?"}`), await("q2"), result))
	if !res.OK {
		t.Fatalf("result %+v", res)
	}
	records, err := store.ReadAudit(context.Background(), f.n.Bus.JS, res.Session)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	byKind := map[string]*wire.AuditRecord{}
	for _, r := range records {
		kinds = append(kinds, r.Kind+" "+r.Request)
		byKind[r.Kind+" "+r.Request] = r
	}
	want := "session.started ,answer q1,request q2,answer q2,session.ended "
	if got := strings.Join(kinds, ","); got != want {
		t.Fatalf("audit records %q; want %q", got, want)
	}
	q1 := byKind["answer q1"]
	if q1.Asked == 0 || q1.Asked > q1.Time || q1.Text != "Which one?" || q1.Type != "question" || string(q1.Value) != `"now"` {
		t.Errorf("q1's one record %+v; want the answer carrying the request's read time and text", q1)
	}
	if q2 := byKind["answer q2"]; q2.Asked != 0 || q2.Latency < float64(4*auditHold/time.Millisecond) {
		t.Errorf("q2's answer %+v; want an answer record apart from its request record", q2)
	}
}

// A request held for its answer when the node stops is written as it is.
func TestAuditWritesWhatItHoldsWhenItCloses(t *testing.T) {
	f := start(t, simHost("w", ""))
	rec := &wire.AuditRecord{Kind: "request", Time: time.Now().UnixMilli(), Node: "test", Host: "w", Session: "s-held", Request: "q1", Type: "question", Text: "Still there?"}
	f.n.audit.record(wire.AuditID("s-held", 0, "r1")+".request", rec)
	f.n.audit.close(10 * time.Second)
	records, err := store.ReadAudit(context.Background(), f.n.Bus.JS, "s-held")
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != 1 || records[0].Kind != "request" || records[0].Text != "Still there?" {
		t.Fatalf("records %+v; want the held request", records)
	}
}

// hugeQuestion is an agent that asks a question of 9 MB, over the server's payload
// limit, then fails with an error as long.
const hugeQuestion = `import json, sys
sys.stdin.readline()
print(json.dumps({"type": "question", "id": "q1", "question": "Which? " + "x" * 9000000}), flush=True)
answer = json.loads(sys.stdin.readline())
print(json.dumps({"type": "error", "message": "got " + json.dumps(answer.get("value")) + " " + "y" * 9000000}), flush=True)
`

// TestRecordsOverThePayloadLimit: a request too big for the server to carry gets its
// default at once (no supervisor can be sent it), saying why, and a record too big for
// it (the request's, with its text; the session's end, with its error) is not
// published again for ever: it is stored cut, says how long it was, and is counted.
func TestRecordsOverThePayloadLimit(t *testing.T) {
	f := start(t, fmt.Sprintf("[hosts.big]\ncommand = \"python3\"\nargs = [\"-c\", %q]\nmax_line_bytes = 16777216\n", hugeQuestion)+`
[supervisors.fast]
strategy = "static"
answers = { question = "that one" }
[[routes]]
supervisor = "fast"
`)
	res := f.run("big", "go")
	if res.OK || !strings.HasPrefix(res.Error, `got "" yyy`) { // the question's default
		t.Fatalf("result: ok %v, error %.200q", res.OK, res.Error)
	}
	byKind := map[string]*wire.AuditRecord{}
	proctest.Within(t, 10*time.Second, func() error {
		records, err := store.ReadAudit(context.Background(), f.n.Bus.JS, res.Session)
		if err != nil {
			return err
		}
		for _, r := range records {
			byKind[r.Kind] = r
		}
		if byKind["answer"] == nil || byKind["session.ended"] == nil {
			return fmt.Errorf("%d records, not yet the answer and the end", len(records))
		}
		return nil
	})
	answer, ended := byKind["answer"], byKind["session.ended"]
	if string(answer.Value) != `""` || answer.Decider != "default" ||
		!strings.Contains(answer.Reason, "over the 8387584 the NATS server takes: no supervisor can be asked; its default") {
		t.Errorf("the answer record: value %s, decider %s, reason %.300q", answer.Value, answer.Decider, answer.Reason)
	}
	if ended.Truncated < 9000000 || len(ended.Error) > 2<<20 || !strings.HasPrefix(ended.Error, `got "" yyy`) || !strings.HasSuffix(ended.Error, "…") {
		t.Errorf("the end's record: truncated %d, error of %d bytes", ended.Truncated, len(ended.Error))
	}
	if r := byKind["request"]; r == nil || r.Truncated < 9000000 || !strings.HasPrefix(r.Text, "Which? xxx") || !strings.HasSuffix(r.Text, "…") {
		t.Errorf("the request's record: %v", r != nil)
	}
	if v := testutil.ToFloat64(f.n.Metrics.AuditTruncated); v != 2 {
		t.Errorf("agentmux_audit_truncated_total = %v; want 2 (the request, the end)", v)
	}
}
