package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmux/agentmux/bus"
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
	answerer(t, f.n.Bus.Conn, "slow", func(_ *bus.Ask, m *nats.Msg) {
		time.AfterFunc(4*auditHold, func() { reply(t, m, `"later"`) })
	})
	res := f.run("w", script(send(`{"type":"question","id":"q1","question":"Which one?"}`), await("q1"),
		send(`{"type":"question","id":"q2","question":"A slow one?"}`), await("q2"), result))
	if !res.OK {
		t.Fatalf("result %+v", res)
	}
	records, err := bus.ReadAudit(context.Background(), f.n.Bus.JS, res.Session)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	byKind := map[string]*bus.AuditRecord{}
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
	rec := &bus.AuditRecord{Kind: "request", Time: time.Now().UnixMilli(), Node: "test", Host: "w", Session: "s-held", Request: "q1", Type: "question", Text: "Still there?"}
	f.n.audit.record(bus.AuditID("s-held", 0, "r1")+".request", rec)
	f.n.audit.close(10 * time.Second)
	records, err := bus.ReadAudit(context.Background(), f.n.Bus.JS, "s-held")
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != 1 || records[0].Kind != "request" || records[0].Text != "Still there?" {
		t.Fatalf("records %+v; want the held request", records)
	}
}
