package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/agentmux/agentmux/wire"
)

// wireRounds is how many round trips each of the wire's floors is measured over.
const wireRounds = 5000

// Wire is the floor the machine and its NATS server set, measured in the same
// invocation as the systems, as `nats bench` measures it: one client's request/reply
// round trips to a responder that answers at once, and synchronous JetStream publishes
// (each waits for its ack) to the audit stream, one after another.
type Wire struct {
	Rounds    int     `json:"rounds"`
	Request   Latency `json:"request_rtt"`
	RequestPC float64 `json:"requests_per_cpu_s"`
	Publish   Latency `json:"js_publish_rtt"`
	PublishPC float64 `json:"js_publishes_per_cpu_s"`
}

// measureWire measures the wire's floors on nc and js (B1's server, its responder
// on b1Subject, and its audit stream).
func measureWire(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) (*Wire, error) {
	w := &Wire{Rounds: wireRounds}
	h, before := newHist(), readUsage()
	for range wireRounds {
		t0 := time.Now()
		if _, err := nc.RequestWithContext(ctx, b1Subject, []byte(`{"type":"question"}`)); err != nil {
			return nil, fmt.Errorf("wire: request: %w", err)
		}
		_ = h.RecordValue(max(1, time.Since(t0).Microseconds()))
	}
	w.Request = summarize(h)
	if cpu := readUsage().since(before).cpu; cpu > 0 {
		w.RequestPC = wireRounds / cpu
	}
	rec := (&wire.AuditRecord{Kind: "answer", Node: "loadgen-wire", Host: "wire", Session: "wire", Request: "q", Type: "question",
		Text: "Which one?", Value: []byte(`"unit"`), Outcome: "answered", Decider: "rule:b1"}).AppendJSON(nil)
	h, before = newHist(), readUsage()
	for range wireRounds {
		t0 := time.Now()
		if _, err := js.Publish(ctx, wire.AuditSubject("wire", "wire"), rec, jetstream.WithMsgID(nuid.Next())); err != nil {
			return nil, fmt.Errorf("wire: JetStream publish: %w", err)
		}
		_ = h.RecordValue(max(1, time.Since(t0).Microseconds()))
	}
	w.Publish = summarize(h)
	if cpu := readUsage().since(before).cpu; cpu > 0 {
		w.PublishPC = wireRounds / cpu
	}
	return w, nil
}
