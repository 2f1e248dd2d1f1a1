package node

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/internal/queue"
	"github.com/agentmux/agentmux/metrics"
	"github.com/agentmux/agentmux/wire"
)

const (
	// auditAckTimeout is how long a record may wait for JetStream's ack before it is
	// published again (with the same id: the stream keeps it once).
	auditAckTimeout = 5 * time.Second
	auditRetryWait  = 500 * time.Millisecond
	// auditHold is how long a request's record waits for its answer before it is
	// published alone. A request answered within it is written once: as its answer,
	// carrying the request (wire.AuditRecord.Asked), which halves the audit's cost on
	// the request path. A node killed -9 loses at most this much of its last requests'
	// records, as it loses whatever else it had not yet published. A request's record
	// is queued without waking the auditor: it comes with its answer's, or within
	// auditHold with the wake a timer gives.
	auditHold = 50 * time.Millisecond
)

// auditor publishes audit records to JetStream from its own goroutine, each with a
// Nats-Msg-Id so the stream keeps every record exactly once. A record whose publish
// fails or is not acknowledged (a leader election, a reconnect) is published again
// until it is acknowledged or the auditor closes. A request's record is held up to
// auditHold for its answer to stand for both. record never blocks.
type auditor struct {
	nc      *nats.Conn
	pub     *bus.StreamPublisher
	log     *slog.Logger
	metrics *metrics.Set
	q       *queue.Queue[auditItem]
	done    chan struct{}
	hold    time.Duration

	mu    sync.Mutex // protects tries
	tries map[string]int
	retry atomic.Int32 // records being published again: len(tries), read without mu
	// quiet is set while a timer is due to wake the auditor for requests' records
	// queued without waking it.
	quiet atomic.Bool

	// Owned by the run goroutine.
	held  map[string]*heldRequest // by audit id without ".request"
	order []string                // held keys, oldest first (every hold is as long)
	armed bool                    // a tick is due
}

// auditItem is a record to publish, one to publish again (msg set), or a tick (neither):
// time to publish the requests held longest.
type auditItem struct {
	id       string
	rec      *wire.AuditRecord
	msg      *nats.Msg
	exchange *wire.ModelExchange
	at       time.Time // when a request's record was queued
}

type heldRequest struct {
	id  string
	rec *wire.AuditRecord
	due time.Time
}

// startAudit starts the node's auditor, which records to the audit stream until the
// node stops.
func (n *Node) startAudit(context.Context) error {
	a, err := newAuditor(n.Bus.Conn, n.Metrics, n.log, auditHold)
	if err != nil {
		return err
	}
	n.audit = a
	return nil
}

func newAuditor(nc *nats.Conn, m *metrics.Set, log *slog.Logger, hold time.Duration) (*auditor, error) {
	a := &auditor{nc: nc, log: log, metrics: m, q: queue.New[auditItem](), done: make(chan struct{}), hold: hold,
		tries: map[string]int{}, held: map[string]*heldRequest{}}
	pub, err := bus.NewStreamPublisher(nc, bus.StreamPublisherConfig{AckTimeout: auditAckTimeout, Acked: a.acked, Failed: a.failed})
	if err != nil {
		return nil, err
	}
	a.pub = pub
	go a.run()
	return a, nil
}

// holds reports whether rec is a request's record, held for its answer's.
func (a *auditor) holds(rec *wire.AuditRecord) bool { return rec.Kind == "request" && a.hold > 0 }

func (a *auditor) record(id string, rec *wire.AuditRecord) {
	if !a.holds(rec) {
		a.q.Push(auditItem{id: id, rec: rec})
		return
	}
	a.q.PushQuiet(auditItem{id: id, rec: rec, at: time.Now()})
	if a.quiet.CompareAndSwap(false, true) {
		time.AfterFunc(a.hold, func() {
			a.quiet.Store(false)
			a.q.Wake()
		})
	}
}

// exchange records a model call's request and answer ([gateway] record = "full") to
// the exchanges' stream, as it does audit records. It never blocks.
func (a *auditor) exchange(x *wire.ModelExchange) {
	a.q.Push(auditItem{id: x.ID, exchange: x})
}

// failed publishes a record again after a pause; it runs on a NATS goroutine.
func (a *auditor) failed(msg *nats.Msg, err error) {
	id := msg.Header.Get(jetstream.MsgIDHeader)
	a.mu.Lock()
	a.tries[id]++
	tries := a.tries[id]
	a.retry.Store(int32(len(a.tries)))
	a.mu.Unlock()
	a.metrics.PublishErrors.WithLabelValues("audit").Inc()
	if tries == 1 || tries%20 == 0 {
		a.log.Warn("audit record not acknowledged; publishing it again", "id", id, "tries", tries, "err", err)
	}
	time.AfterFunc(auditRetryWait, func() { a.q.Push(auditItem{id: id, msg: msg}) })
}

// acked forgets the tries of a record published again; it runs on a NATS goroutine.
func (a *auditor) acked(msg *nats.Msg) {
	if a.retry.Load() == 0 {
		return
	}
	a.mu.Lock()
	delete(a.tries, msg.Header.Get(jetstream.MsgIDHeader))
	a.retry.Store(int32(len(a.tries)))
	a.mu.Unlock()
}

func (a *auditor) run() {
	defer close(a.done)
	a.q.Drain(func(batch []auditItem) bool {
		for _, it := range batch {
			switch {
			case it.msg != nil:
				a.publish(it.id, it.msg)
			case it.exchange != nil:
				a.publishExchange(it.exchange)
			case it.rec == nil:
				a.armed = false
			case a.holds(it.rec):
				key := strings.TrimSuffix(it.id, ".request")
				a.held[key] = &heldRequest{id: it.id, rec: it.rec, due: it.at.Add(a.hold)}
				a.order = append(a.order, key)
			case it.rec.Kind == "answer":
				if h := a.held[strings.TrimSuffix(it.id, ".answer")]; h != nil {
					delete(a.held, strings.TrimSuffix(it.id, ".answer"))
					it.rec.Asked = h.rec.Time // this record stands for the request too
					if it.rec.Text == "" {
						it.rec.Text = h.rec.Text
					}
					it.rec.Ask = h.rec.Ask
				}
				a.publishRecord(it.id, it.rec)
			default:
				a.publishRecord(it.id, it.rec)
			}
		}
		a.release(time.Now())
		return true
	})
	a.release(time.Time{}) // closing: every request held goes out now
}

// release publishes the requests held until before (all with the zero time), and
// arms a tick for the next one due.
func (a *auditor) release(before time.Time) {
	for len(a.order) > 0 {
		key := a.order[0]
		h := a.held[key]
		if h == nil { // answered meanwhile
			a.order = a.order[1:]
			continue
		}
		if !before.IsZero() && h.due.After(before) {
			break
		}
		delete(a.held, key)
		a.order = a.order[1:]
		a.publishRecord(h.id, h.rec)
	}
	if len(a.order) == 0 {
		a.order = nil // let a burst's backing array go
		return
	}
	if !a.armed && !before.IsZero() {
		a.armed = true
		time.AfterFunc(a.held[a.order[0]].due.Sub(before), func() { a.q.Push(auditItem{}) })
	}
}

func (a *auditor) publishRecord(id string, rec *wire.AuditRecord) {
	data := rec.AppendJSON(nil)
	if limit := bus.BodyLimit(a.nc); len(data) > limit {
		// Over the server's limit it would be refused, and published again for ever.
		rec.Fit(len(data), limit/8)
		data = rec.AppendJSON(nil)
		a.metrics.AuditTruncated.Inc()
		a.log.Warn("audit record over the server's payload limit; stored with its longest fields cut", "id", id, "bytes", rec.Truncated, "limit", limit)
	}
	msg := &nats.Msg{Subject: wire.AuditSubject(rec.Host, rec.Session), Data: data,
		Header: nats.Header{jetstream.MsgIDHeader: []string{id}}}
	if a.publish(id, msg) {
		a.metrics.AuditPublishes.Inc()
	}
}

func (a *auditor) publishExchange(x *wire.ModelExchange) {
	id := x.ID + ".bodies" // apart from its audit record's, in the auditor's tries
	msg := &nats.Msg{Subject: wire.ExchangeSubject(x.Host, x.Session), Data: x.AppendJSON(nil, bus.BodyLimit(a.nc)),
		Header: nats.Header{jetstream.MsgIDHeader: []string{id}}}
	a.publish(id, msg)
}

func (a *auditor) publish(id string, msg *nats.Msg) bool {
	if err := a.pub.Publish(msg); err != nil {
		a.failed(msg, err)
		return false
	}
	return true
}

// close publishes what is queued and held and waits, up to timeout, for JetStream to
// ack it all.
func (a *auditor) close(timeout time.Duration) {
	if !a.q.Close() {
		return
	}
	deadline := time.After(timeout)
	select {
	case <-a.done:
	case <-deadline:
		a.log.Warn("audit queue not flushed in time")
		return
	}
	select {
	case <-a.pub.Idle():
	case <-deadline:
		a.log.Warn("audit records not acknowledged in time", "pending", a.pub.Pending())
	}
	a.pub.Close()
}
