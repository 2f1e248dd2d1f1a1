package node

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/internal/queue"
	"github.com/agentmux/agentmux/metrics"
)

const (
	// auditAckTimeout is how long a record may wait for JetStream's ack before it is
	// published again (with the same id: the stream keeps it once).
	auditAckTimeout = 5 * time.Second
	auditRetryWait  = 500 * time.Millisecond
)

// auditor publishes audit records to JetStream from its own goroutine, each with a
// Nats-Msg-Id so the stream keeps every record exactly once. A record whose publish
// fails or is not acknowledged (a leader election, a reconnect) is published again
// until it is acknowledged or the auditor closes. record never blocks.
type auditor struct {
	js      jetstream.JetStream // its own: its pending acks are the auditor's alone
	log     *slog.Logger
	metrics *metrics.Set
	q       *queue.Queue[auditItem]
	done    chan struct{}

	mu    sync.Mutex // protects tries
	tries map[string]int
	retry atomic.Int32 // records being published again: len(tries), read without mu
}

type auditItem struct {
	id  string
	rec *bus.AuditRecord
	msg *nats.Msg // set when published before and published again
}

func newAuditor(nc *nats.Conn, m *metrics.Set, log *slog.Logger) (*auditor, error) {
	a := &auditor{log: log, metrics: m, q: queue.New[auditItem](), done: make(chan struct{}), tries: map[string]int{}}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncErrHandler(a.failed), jetstream.WithPublishAsyncAckHandler(a.acked),
		jetstream.WithPublishAsyncTimeout(auditAckTimeout))
	if err != nil {
		return nil, err
	}
	a.js = js
	go a.run()
	return a, nil
}

func (a *auditor) record(id string, rec *bus.AuditRecord) { a.q.Push(auditItem{id: id, rec: rec}) }

// failed publishes a record again after a pause; it runs on a NATS goroutine.
func (a *auditor) failed(_ jetstream.JetStream, msg *nats.Msg, err error) {
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
func (a *auditor) acked(_ jetstream.JetStream, msg *nats.Msg, _ *jetstream.PubAck) {
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
			msg := it.msg
			if msg == nil {
				msg = &nats.Msg{Subject: bus.AuditSubject(it.rec.Host, it.rec.Session), Data: it.rec.AppendJSON(nil),
					Header: nats.Header{bus.HeaderSession: []string{it.rec.Session}, bus.HeaderHost: []string{it.rec.Host}}}
			}
			if _, err := a.js.PublishMsgAsync(msg, jetstream.WithMsgID(it.id)); err != nil {
				a.failed(a.js, msg, err)
				continue
			}
			if it.msg == nil {
				a.metrics.AuditPublishes.Inc()
			}
		}
		return true
	})
}

// close publishes what is queued and waits, up to timeout, for JetStream to ack it all.
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
	case <-a.js.PublishAsyncComplete():
	case <-deadline:
		a.log.Warn("audit records not acknowledged in time", "pending", a.js.PublishAsyncPending())
	}
}
