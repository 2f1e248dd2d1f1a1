package node

import (
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/metrics"
)

// auditor publishes audit records to JetStream from its own goroutine, each with a
// Nats-Msg-Id so the stream keeps every record exactly once. record never blocks.
type auditor struct {
	js      jetstream.JetStream
	log     *slog.Logger
	metrics *metrics.Set
	wake    chan struct{}
	done    chan struct{}

	mu      sync.Mutex // protects queue and closing
	queue   []auditItem
	closing bool
}

type auditItem struct {
	id  string
	rec *bus.AuditRecord
}

func newAuditor(js jetstream.JetStream, m *metrics.Set, log *slog.Logger) *auditor {
	a := &auditor{js: js, log: log, metrics: m, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go a.run()
	return a
}

func (a *auditor) record(id string, rec *bus.AuditRecord) {
	a.mu.Lock()
	if !a.closing {
		a.queue = append(a.queue, auditItem{id, rec})
	}
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

func (a *auditor) run() {
	defer close(a.done)
	for range a.wake {
		a.mu.Lock()
		batch, closing := a.queue, a.closing
		a.queue = nil
		a.mu.Unlock()
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
		if closing {
			a.mu.Lock()
			empty := len(a.queue) == 0
			a.mu.Unlock()
			if empty {
				return
			}
		}
	}
}

// close publishes what is queued and waits, up to timeout, for JetStream to ack it all.
func (a *auditor) close(timeout time.Duration) {
	a.mu.Lock()
	already := a.closing
	a.closing = true
	a.mu.Unlock()
	if already {
		return
	}
	select {
	case a.wake <- struct{}{}:
	default:
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
