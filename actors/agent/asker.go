package agent

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/metrics"
)

// Asker sends every agent's requests to supervisors over one reply subscription for the
// whole node: no goroutine, context or subscription per request. A request nobody
// subscribes to is retried with backoff until its deadline (the server's "no
// responders" status arrives on the reply subject); replies are taken until lateGrace
// after the deadline, so late ones are counted rather than lost.
type Asker struct {
	nc      *nats.Conn
	prefix  string
	sub     *nats.Subscription
	metrics *metrics.Set

	mu    sync.Mutex
	calls map[string]*call
}

type call struct {
	msg      *nats.Msg
	deadline time.Time
	backoff  time.Duration
	timer    *time.Timer // the next retry, or the end of listening
	deliver  func(*bus.Reply)
}

// NewAsker subscribes the node's reply inbox.
func NewAsker(nc *nats.Conn, m *metrics.Set) (*Asker, error) {
	a := &Asker{nc: nc, prefix: nc.NewInbox() + ".", metrics: m, calls: map[string]*call{}}
	sub, err := nc.Subscribe(a.prefix+"*", a.onReply)
	if err != nil {
		return nil, fmt.Errorf("agent: reply subscription: %w", err)
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		return nil, err
	}
	a.sub = sub
	return a, nil
}

// Close stops listening; calls still open get no answer (their timers write defaults).
func (a *Asker) Close() {
	_ = a.sub.Unsubscribe()
	a.mu.Lock()
	defer a.mu.Unlock()
	for key, c := range a.calls {
		c.timer.Stop()
		delete(a.calls, key)
	}
}

// Ask sends msg and calls deliver with the reply, at most once, from the subscription's
// goroutine. done ends the call early (the request was answered or cancelled); without
// it, the call listens until lateGrace after the deadline.
func (a *Asker) Ask(msg *nats.Msg, deadline time.Time, deliver func(*bus.Reply)) (done func()) {
	key := nuid.Next()
	c := &call{msg: msg, deadline: deadline, backoff: minAskBackoff, deliver: deliver}
	msg.Reply = a.prefix + key
	a.mu.Lock()
	a.calls[key] = c
	c.timer = time.AfterFunc(time.Until(deadline.Add(lateGrace)), func() { a.expire(key) })
	a.mu.Unlock()
	a.publish(c)
	return func() { a.end(key) }
}

func (a *Asker) publish(c *call) {
	if err := a.nc.PublishMsg(c.msg); err != nil {
		a.metrics.AskRequests.WithLabelValues("error").Inc()
	}
}

func (a *Asker) end(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.calls[key]; ok {
		c.timer.Stop()
		delete(a.calls, key)
	}
}

// expire ends a call nobody answered.
func (a *Asker) expire(key string) {
	a.mu.Lock()
	_, ok := a.calls[key]
	delete(a.calls, key)
	a.mu.Unlock()
	if ok {
		a.metrics.AskRequests.WithLabelValues("timeout").Inc()
	}
}

func (a *Asker) onReply(m *nats.Msg) {
	key := m.Subject[len(a.prefix):]
	a.mu.Lock()
	c, ok := a.calls[key]
	if !ok {
		a.mu.Unlock()
		return // ended: answered already, or long past its deadline
	}
	if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
		// No responders: try again after the backoff, while the deadline allows.
		a.metrics.AskRequests.WithLabelValues("no_responders").Inc()
		if time.Now().Add(c.backoff).Before(c.deadline) {
			c.timer.Stop()
			c.timer = time.AfterFunc(c.backoff, func() { a.retry(key) })
			c.backoff = min(c.backoff*2, maxAskBackoff)
		}
		a.mu.Unlock()
		return
	}
	c.timer.Stop()
	delete(a.calls, key)
	a.mu.Unlock()
	a.metrics.AskRequests.WithLabelValues("answered").Inc()
	var reply bus.Reply
	if err := json.Unmarshal(m.Data, &reply); err != nil {
		// Not a Reply: validation turns it into the default, outcome invalid.
		reply = bus.Reply{Value: m.Data, Decider: "unknown", Reason: "supervisor reply is not a JSON object: " + err.Error()}
	}
	c.deliver(&reply)
}

// retry republishes a call after a no-responders status; past the deadline it listens
// out its late grace instead.
func (a *Asker) retry(key string) {
	a.mu.Lock()
	c, ok := a.calls[key]
	if ok {
		c.timer = time.AfterFunc(time.Until(c.deadline.Add(lateGrace)), func() { a.expire(key) })
	}
	a.mu.Unlock()
	if ok {
		a.publish(c)
	}
}
