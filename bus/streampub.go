package bus

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/internal/rawjson"
)

// StreamPublisher publishes messages to JetStream streams and tells, for each, whether
// the stream stored it: Acked, or Failed with why (the stream refused it, nobody
// answered, or no acknowledgement came within AckTimeout: a leader election, a
// reconnect). It is jetstream.PublishMsgAsync for a node's hottest stream, the audit,
// with the cost per message cut to the publish: one reply subscription and one timer
// for all messages, acknowledgements read without reflection. Messages carry their own
// Nats-Msg-Id, so one published again after a failure is stored once.
type StreamPublisher struct {
	nc     *nats.Conn
	prefix string // the reply subjects': prefix + a number
	sub    *nats.Subscription
	cfg    StreamPublisherConfig

	mu      sync.Mutex
	next    uint64
	pending map[string]*nats.Msg // by reply subject
	sent    []sentMsg            // in publishing order: the oldest times out first
	timer   *time.Timer          // armed while anything is pending
	armed   bool
	// reporting counts the fates taken from pending and not yet reported: Idle waits
	// for them too, so that a fate reported after it is never missed.
	reporting int
	idle      chan struct{} // closed when nothing is pending or being reported; nil: none asked for
	closed    bool
}

// StreamPublisherConfig says what a StreamPublisher does with its messages' fates.
// Both callbacks run on NATS goroutines (or the publisher's timer), never under its
// lock, and must not block.
type StreamPublisherConfig struct {
	AckTimeout time.Duration
	Acked      func(msg *nats.Msg)
	Failed     func(msg *nats.Msg, err error)
}

type sentMsg struct {
	reply string
	at    time.Time
}

// ErrNotAcknowledged is a message's failure when no acknowledgement came in time.
var ErrNotAcknowledged = errors.New("no acknowledgement from the stream in time")

// NewStreamPublisher subscribes to the acknowledgements of nc's publishes.
func NewStreamPublisher(nc *nats.Conn, cfg StreamPublisherConfig) (*StreamPublisher, error) {
	p := &StreamPublisher{nc: nc, prefix: nc.NewInbox() + ".", cfg: cfg, pending: map[string]*nats.Msg{}}
	sub, err := nc.Subscribe(p.prefix+"*", p.onAck)
	if err != nil {
		return nil, fmt.Errorf("subscribe to stream acknowledgements: %w", err)
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		_ = sub.Unsubscribe()
		return nil, err
	}
	p.sub = sub
	p.timer = time.AfterFunc(time.Hour, p.sweep)
	p.timer.Stop()
	return p, nil
}

// Publish publishes msg (its Reply is set here) and reports its fate later. An error
// means it was not sent, and nothing will be reported.
func (p *StreamPublisher) Publish(msg *nats.Msg) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nats.ErrConnectionClosed
	}
	p.next++
	msg.Reply = p.prefix + strconv.FormatUint(p.next, 10)
	p.pending[msg.Reply] = msg
	p.sent = append(p.sent, sentMsg{reply: msg.Reply, at: time.Now()})
	if !p.armed {
		p.armed = true
		p.timer.Reset(p.cfg.AckTimeout)
	}
	p.mu.Unlock()
	if err := p.nc.PublishMsg(msg); err != nil {
		p.mu.Lock()
		delete(p.pending, msg.Reply)
		p.notifyIdle()
		p.mu.Unlock()
		return err
	}
	return nil
}

// onAck settles the message an acknowledgement answers.
func (p *StreamPublisher) onAck(ack *nats.Msg) {
	p.mu.Lock()
	msg, ok := p.pending[ack.Subject]
	if ok {
		delete(p.pending, ack.Subject)
		p.reporting++
	}
	for len(p.sent) > 0 { // acknowledgements come in order: forget the settled oldest
		if _, waiting := p.pending[p.sent[0].reply]; waiting {
			break
		}
		p.sent = p.sent[1:]
	}
	p.mu.Unlock()
	if !ok {
		return // timed out already: it was published again, under another reply
	}
	if err := ackError(ack); err != nil {
		p.cfg.Failed(msg, err)
	} else {
		p.cfg.Acked(msg)
	}
	p.reported(1)
}

// reported counts n fates reported.
func (p *StreamPublisher) reported(n int) {
	p.mu.Lock()
	p.reporting -= n
	p.notifyIdle()
	p.mu.Unlock()
}

// ackError reads a JetStream publish acknowledgement: nil when the stream stored the
// message (or already had it: a duplicate id).
func ackError(ack *nats.Msg) error {
	if len(ack.Data) == 0 && ack.Header.Get("Status") == "503" {
		return jetstream.ErrNoStreamResponse
	}
	var failure []byte
	stored := false
	if !rawjson.Fields(ack.Data, func(key, value []byte) bool {
		switch string(key) {
		case "error":
			failure = value
		case "seq":
			stored = true
		}
		return true
	}) {
		return fmt.Errorf("unreadable acknowledgement %.200q", ack.Data)
	}
	switch {
	case failure != nil:
		return fmt.Errorf("the stream refused the message: %s", failure)
	case !stored:
		return fmt.Errorf("acknowledgement without a sequence: %.200s", ack.Data)
	}
	return nil
}

// sweep fails the messages whose acknowledgement is overdue and arms the timer for the
// next one due.
func (p *StreamPublisher) sweep() {
	now := time.Now()
	var overdue []*nats.Msg
	p.mu.Lock()
	for len(p.sent) > 0 {
		s := p.sent[0]
		msg, ok := p.pending[s.reply]
		if !ok { // settled
			p.sent = p.sent[1:]
			continue
		}
		if now.Sub(s.at) < p.cfg.AckTimeout {
			break
		}
		delete(p.pending, s.reply)
		p.sent = p.sent[1:]
		overdue = append(overdue, msg)
	}
	p.armed = len(p.sent) > 0
	if p.armed {
		p.timer.Reset(p.sent[0].at.Add(p.cfg.AckTimeout).Sub(now))
	} else {
		p.sent = nil // let a burst's backing array go
	}
	p.reporting += len(overdue)
	p.notifyIdle()
	p.mu.Unlock()
	for _, msg := range overdue {
		p.cfg.Failed(msg, ErrNotAcknowledged)
	}
	if len(overdue) > 0 {
		p.reported(len(overdue))
	}
}

// Pending is how many messages await their acknowledgement.
func (p *StreamPublisher) Pending() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pending)
}

// Idle returns a channel closed once no message awaits its acknowledgement and every
// fate has been reported.
func (p *StreamPublisher) Idle() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idle == nil {
		p.idle = make(chan struct{})
	}
	ch := p.idle
	p.notifyIdle()
	return ch
}

func (p *StreamPublisher) notifyIdle() {
	if p.idle != nil && len(p.pending) == 0 && p.reporting == 0 {
		close(p.idle)
		p.idle = nil
	}
}

// Close stops publishing and listening for acknowledgements; what is pending is
// reported no more.
func (p *StreamPublisher) Close() {
	p.mu.Lock()
	p.closed = true
	p.timer.Stop()
	p.mu.Unlock()
	_ = p.sub.Unsubscribe()
}
