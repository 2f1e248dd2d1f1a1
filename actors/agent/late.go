package agent

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentmux/agentmux/wire"
)

// Late holds a node's shadow decisions whose session ended with its answer given and
// the shadow's still to come: each is recorded when it comes, or without it at its
// deadline or when the node closes Late. A session that ends at once after its last
// answer thus loses none of its shadow's decisions. Every agent of a node shares one.
type Late struct {
	mu      sync.Mutex
	waiting map[*lateShadow]struct{}
	closed  bool
}

// NewLate is an empty Late.
func NewLate() *Late { return &Late{waiting: map[*lateShadow]struct{}{}} }

// lateShadow is one shadow decision waited for after its session ended.
type lateShadow struct {
	owner   *Late
	sh      *shadowing
	rec     *wire.AuditRecord
	audit   func(string, *wire.AuditRecord)
	counted *prometheus.CounterVec
	timer   *time.Timer
	once    sync.Once
}

// wait takes sh, whose session ended (rec is its record of kind shadow), until its
// shadow answers or its deadline passes. From now on only Late touches sh.
func (l *Late) wait(sh *shadowing, rec *wire.AuditRecord, audit func(string, *wire.AuditRecord), counted *prometheus.CounterVec) {
	x := &lateShadow{owner: l, sh: sh, rec: rec, audit: audit, counted: counted}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		x.deliver(nil, "no answer from the shadow before the node stopped")
		return
	}
	l.waiting[x] = struct{}{}
	x.timer = time.AfterFunc(time.Until(sh.deadline), func() { x.deliver(nil, "no answer from the shadow by its deadline") })
	l.mu.Unlock()
	sh.late.Store(x)
}

// deliver records the shadow's decision r (nil: none, for why), once.
func (x *lateShadow) deliver(r *wire.Reply, why string) {
	x.once.Do(func() {
		x.owner.mu.Lock()
		delete(x.owner.waiting, x)
		if x.timer != nil {
			x.timer.Stop()
		}
		x.owner.mu.Unlock()
		x.sh.reply = r
		x.sh.settle(why)
		x.rec.Time = time.Now().UnixMilli()
		writeShadow(x.rec, x.sh, why, x.audit, x.counted)
	})
}

// Close records every decision still waited for without it, and any handed to Late
// from now on at once: the node is stopping, and its audit closes next.
func (l *Late) Close() {
	l.mu.Lock()
	l.closed = true
	waiting := make([]*lateShadow, 0, len(l.waiting))
	for x := range l.waiting {
		waiting = append(waiting, x)
	}
	l.mu.Unlock()
	for _, x := range waiting {
		x.deliver(nil, "no answer from the shadow before the node stopped")
	}
}
