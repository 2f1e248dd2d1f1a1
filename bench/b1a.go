package bench

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// b1aHost is the host B1a's audit records name.
const b1aHost = "load"

// b1aRetry is how long B1a waits before publishing a record again whose publication
// failed or was not acknowledged in time.
const b1aRetry = 250 * time.Millisecond

// runB1a runs B1a: B1 writing what agentmux writes — its audit records (auditTrail)
// and, as a node keeps them by default (--keep-events), every event in the history
// stream, which exists for this run alone — and doing with each request what a node
// does besides (decisions). Its supervisor answers on B1a's own connection, as a
// node's supervisors answer on the node's, not on one of its own as B1's does: a
// second connection is work a node does not do.
func runB1a(ctx context.Context, c *Config, b *bus.Bus, log *slog.Logger, progress Progress) (*System, error) {
	return runB1aDeciding(ctx, c, b, newDecisions(), log, progress)
}

// runB1aDeciding runs B1a, counting its requests and decisions in decide.
func runB1aDeciding(ctx context.Context, c *Config, b *bus.Bus, decide *decisions, log *slog.Logger, progress Progress) (*System, error) {
	if c.KeepEvents {
		if _, err := store.Declare(ctx, b.JS, 0, store.Keep{Events: &store.Retention{MaxAge: config.DefaultEventsMaxAge}}, log); err != nil {
			return nil, err
		}
		defer func() { _ = b.JS.DeleteStream(context.WithoutCancel(ctx), wire.EventStream) }()
	}
	sub, err := decide.supervise(b.Conn, b1aSubject)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	h := &harness{c: c, nc: b.Conn, trail: &auditTrail{js: b.JS, node: "loadgen-b1a"}, ask: b1aSubject, decide: decide}
	s, err := h.run(ctx, "B1a", progress)
	if err == nil {
		err = Settle(ctx)
	}
	return s, err
}

// auditTrail is what B1a adds to B1: the records agentmux writes for a session —
// started, each request with its answer and the request as asked, ended — to the same
// JetStream stream, each acknowledged and published again until it is, hand-written in
// the most direct way (a PublishAsync and a goroutine awaiting its ack); and the events
// a node publishes besides the agent's own lines, which the history stream keeps as it
// keeps those: session.started, request.answered and session.ended.
type auditTrail struct {
	js   jetstream.JetStream
	node string
	wg   sync.WaitGroup // records not yet acknowledged
}

// write publishes rec of session as id until the stream acknowledges it.
func (a *auditTrail) write(session, id string, rec *wire.AuditRecord) {
	rec.Node, rec.Host, rec.Session = a.node, b1aHost, session
	msg := &nats.Msg{Subject: wire.AuditSubject(b1aHost, session), Data: rec.AppendJSON(nil), Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, id)
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		for {
			f, err := a.js.PublishMsgAsync(msg)
			if err == nil {
				select {
				case <-f.Ok():
					return
				case err = <-f.Err():
				}
			}
			_ = err // what agentmux does with it: count it, and publish again
			time.Sleep(b1aRetry)
		}
	}()
}

// event publishes the event typ of session, as a node does: no acknowledgement, the
// history stream keeps it.
func (a *auditTrail) event(session, typ string, data []byte) {
	_ = a.js.Conn().Publish(wire.EventSubject(b1aHost, session, typ), data)
}

// started records a session's start, with its prompt.
func (a *auditTrail) started(session, prompt string) {
	a.event(session, wire.EventSessionStarted, (&wire.SessionStarted{Session: session, Host: b1aHost, Node: a.node}).AppendJSON(nil))
	a.write(session, wire.AuditID(session, 0, "started"), &wire.AuditRecord{Kind: "session.started", Time: time.Now().UnixMilli(), Text: prompt})
}

// requested records request m on its own, as agentmux records one whose answer takes
// longer than it holds a request's record for (a default at the request's timeout).
func (a *auditTrail) requested(session string, m *protocol.Message) {
	a.write(session, wire.AuditID(session, 0, "r"+m.ID+".request"), &wire.AuditRecord{Kind: "request", Time: time.Now().UnixMilli(),
		Request: m.ID, Type: string(m.Type), Text: m.RequestText(), Ask: m.Raw})
}

// answered records request m's answer resp, asked at asked, and publishes the
// request.answered event. The record of an answer that came soon stands for the
// request too, as agentmux's does: it carries the request's text and ask, unless
// requested recorded them (recorded).
func (a *auditTrail) answered(session string, m *protocol.Message, resp *protocol.Response, decider string, asked time.Time, recorded bool) {
	now := time.Now()
	ms := float64(now.Sub(asked).Microseconds()) / 1000
	a.event(session, wire.EventRequestAnswered, (&wire.RequestAnswered{ID: m.ID, Type: string(m.Type), Value: resp.Value,
		Outcome: string(resp.Outcome), Decider: decider, Latency: ms}).AppendJSON(nil))
	rec := &wire.AuditRecord{Kind: "answer", Time: now.UnixMilli(), Request: m.ID, Type: string(m.Type), Value: resp.Value,
		Outcome: string(resp.Outcome), Decider: decider, Latency: ms}
	if !recorded {
		rec.Text, rec.Ask, rec.Asked = m.RequestText(), m.Raw, asked.UnixMilli()
	}
	a.write(session, wire.AuditID(session, 0, "r"+m.ID+".answer"), rec)
}

// ended records a session's end, with its result line (nil when it failed).
func (a *auditTrail) ended(session string, began time.Time, result []byte, err error) {
	ms := float64(time.Since(began).Microseconds()) / 1000
	ev := &wire.SessionEnded{Session: session, Host: b1aHost, Node: a.node, Outcome: "ok", Result: result, Duration: ms}
	rec := &wire.AuditRecord{Kind: "session.ended", Time: time.Now().UnixMilli(), Outcome: "ok", Value: result, Duration: ms}
	if err != nil {
		ev.Outcome, ev.Error, ev.Result = "error", err.Error(), nil
		rec.Outcome, rec.Error, rec.Value = "error", err.Error(), nil
	}
	a.event(session, wire.EventSessionEnded, ev.AppendJSON(nil))
	a.write(session, wire.AuditID(session, 0, "ended"), rec)
}

// stored counts the records the audit stream holds of B1a's sessions.
func (a *auditTrail) stored(ctx context.Context) (int64, error) {
	s, err := a.js.Stream(ctx, wire.AuditStream)
	if err != nil {
		return 0, err
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(wire.AuditSubject(b1aHost, ">")))
	if err != nil {
		return 0, err
	}
	var n int64
	for _, c := range info.State.Subjects {
		n += int64(c)
	}
	return n, nil
}

// flush waits until every record is acknowledged, or ctx ends.
func (a *auditTrail) flush(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		a.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
