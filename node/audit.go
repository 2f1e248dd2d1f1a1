package node

import (
	"encoding/json"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/internal/queue"
	"github.com/agentmux/agentmux/metrics"
)

// auditor publishes audit records to JetStream from its own goroutine, each with a
// Nats-Msg-Id so the stream keeps every record exactly once. record never blocks.
type auditor struct {
	js      jetstream.JetStream
	log     *slog.Logger
	metrics *metrics.Set
	q       *queue.Queue[auditItem]
	done    chan struct{}
}

type auditItem struct {
	id  string
	rec *bus.AuditRecord
}

func newAuditor(js jetstream.JetStream, m *metrics.Set, log *slog.Logger) *auditor {
	a := &auditor{js: js, log: log, metrics: m, q: queue.New[auditItem](), done: make(chan struct{})}
	go a.run()
	return a
}

func (a *auditor) record(id string, rec *bus.AuditRecord) { a.q.Push(auditItem{id, rec}) }

func (a *auditor) run() {
	defer close(a.done)
	a.q.Drain(func(batch []auditItem) bool {
		for _, it := range batch {
			data, _ := json.Marshal(it.rec)
			msg := &nats.Msg{Subject: bus.AuditSubject(it.rec.Host, it.rec.Session), Data: data,
				Header: nats.Header{bus.HeaderSession: []string{it.rec.Session}, bus.HeaderHost: []string{it.rec.Host}}}
			if _, err := a.js.PublishMsgAsync(msg, jetstream.WithMsgID(it.id)); err != nil {
				a.metrics.PublishErrors.WithLabelValues("audit").Inc()
				a.log.Warn("audit record not published", "id", it.id, "err", err)
				continue
			}
			a.metrics.AuditPublishes.Inc()
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
