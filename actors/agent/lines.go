package agent

import (
	"fmt"
	"time"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/wire"
)

// onLine acts on one canonical message of the agent's: initialization, a request, a
// result, or a line for the session's subjects.
func (a *Agent) onLine(msg *protocol.Message) {
	a.countMessage(msg.Type)
	if a.phase == phaseInitializing {
		a.onInitLine(msg)
		return
	}
	s := a.sess
	if s == nil {
		a.publish("_", string(msg.Type), shown(msg))
		if msg.Type.IsTerminal() || msg.Type.IsRequest() {
			a.log.Warn("agent sent a message outside any session; dropped", "pid", a.pid(), "type", msg.Type)
		}
		return
	}
	s.touch(a.host.IdleTimeout > 0)
	if msg.Type == protocol.TypeUnhandled || !a.host.Sends(string(msg.Type)) {
		a.unhandled(s, msg)
		return
	}
	switch msg.Type {
	case protocol.TypeWithdrawn:
		// The runtime's own budget request is not the agent's to withdraw.
		if p := s.open[msg.ID]; p != nil && p.msg.Type != protocol.TypeBudget {
			a.answer(s, p, nil, protocol.OutcomeCancelled, "agent", "the agent withdrew the request")
		} else if p == nil {
			a.unhold(s, msg.ID, "agent", "the agent withdrew the request while its session was paused")
		}
		return
	case protocol.TypeQuestion, protocol.TypeApproval, protocol.TypeToolCall:
		if s.budget != nil && s.budget.paused != "" {
			a.hold(s, msg)
			return
		}
		a.onRequest(s, msg)
	case protocol.TypeUsage:
		a.publishOn(s, string(msg.Type), msg.Raw)
		if a.behindGateway() {
			a.onClaim(s, msg.Usage)
			return
		}
		if why := msg.Usage.Runaway(); why != "" {
			a.runaway(s, why)
			return
		}
		s.usage.Add(msg.Usage)
		a.checkBudget(s)
	case protocol.TypeCheckpoint:
		a.onCheckpoint(s, msg)
	case protocol.TypePartial:
		s.partial.WriteString(msg.Text)
		a.publishOn(s, string(msg.Type), msg.Raw)
	case protocol.TypeResult:
		a.publishOn(s, string(msg.Type), msg.Raw)
		a.onResult(s, msg)
	case protocol.TypeLimit:
		a.publishOn(s, string(msg.Type), msg.Raw)
		a.limited(s, time.Duration(msg.RetryAfter)*time.Millisecond, fmt.Sprintf("usage limit: host %s's agent says to wait %v: %s",
			a.host.Name, (time.Duration(msg.RetryAfter)*time.Millisecond).Round(time.Second), msg.Message))
	case protocol.TypeError:
		a.publishOn(s, string(msg.Type), msg.Raw)
		if s.budget != nil && s.budget.interrupted {
			a.turnEnded(s) // the turn interrupted for a pause: the session waits
			return
		}
		if l := s.leave; l != nil && l.reason == wire.PausedAtLimit {
			a.goAway(s) // the agent gave up at its limit: paused, from its latest checkpoint
			return
		}
		text := msg.Message
		if text == "" {
			text = "agent reported an error without a message"
		}
		a.endSession(&Result{Error: text, Payload: msg.Raw}, true)
	default:
		a.publishOn(s, string(msg.Type), msg.Raw)
	}
}

// onStreamLine takes a progress, log or heartbeat line, as onLine would take it
// decoded: counted, and published as it is on its session's subject.
func (a *Agent) onStreamLine(typ protocol.Type, raw []byte) {
	a.countMessage(typ)
	s := a.sess
	if a.phase == phaseInitializing || s == nil {
		a.publish("_", string(typ), raw)
		return
	}
	s.touch(a.host.IdleTimeout > 0)
	if !a.host.Sends(string(typ)) {
		a.unhandled(s, &protocol.Message{Type: typ, Name: string(typ), Raw: raw})
		return
	}
	a.publishOn(s, string(typ), raw)
}

// publishOn publishes an event of type typ of session s on its subject, made once.
func (a *Agent) publishOn(s *session, typ string, data []byte) {
	if err := bus.PublishEventOn(a.cfg.Conn, s.subject(a.host.Name, typ), data); err != nil {
		a.shared.events.Inc()
	}
}

// subject is the event subject of the session's messages or events of type t, made
// once.
func (s *session) subject(host, t string) string {
	if sub, ok := s.subjects[t]; ok {
		return sub
	}
	if s.subjects == nil {
		s.subjects = map[string]string{}
	}
	sub := wire.EventSubject(host, s.id, t)
	s.subjects[t] = sub
	return sub
}

func (a *Agent) onInitLine(msg *protocol.Message) {
	switch msg.Type {
	case protocol.TypeInitAck:
		a.caps = map[string]bool{}
		for _, c := range msg.Capabilities {
			a.caps[c] = true
		}
		a.gen++ // retires the init timer
		a.publish("_", string(msg.Type), msg.Raw)
		a.ready()
	case protocol.TypeError:
		a.publish("_", string(msg.Type), msg.Raw)
		text := msg.Message
		if text == "" {
			text = fmt.Sprintf("host '%s' failed to initialize", a.host.Name)
		}
		a.gen++
		a.failWaiting(text)
		a.stop()
	default:
		a.publish("_", string(msg.Type), msg.Raw)
	}
}

// onRawLine decodes a dialect process's line into canonical messages.
func (a *Agent) onRawLine(line []byte) {
	msgs, reply, err := a.dialect.Decode(line)
	if reply != nil && a.phase.live() {
		a.proc.stdin.write(reply)
	}
	if err != nil {
		a.onFrameError(&frameError{reason: "dialect", size: len(line), err: err})
		return
	}
	for _, m := range msgs {
		a.onLine(m)
	}
}

// unhandled reports a message of a type no protocol defines or the host did not
// declare: a listen:unhandled event, counted. An undeclared request is answered at once
// with its default, outcome invalid, so the agent does not wait for an answer that
// nobody is asked for.
func (a *Agent) unhandled(s *session, msg *protocol.Message) {
	a.cfg.Metrics.Unhandled.WithLabelValues(a.host.Name).Inc()
	a.publishOn(s, string(protocol.TypeUnhandled), shown(msg))
	if !msg.Type.IsRequest() {
		return
	}
	p := a.newRequest(s, msg)
	a.cfg.Audit(p.audit+".request", a.requestRecord(s, p))
	a.respond(s, p, p.def, protocol.OutcomeInvalid, "runtime",
		fmt.Sprintf("host %q does not declare %s in its messages; the request was not routed", a.host.Name, msg.Type))
}

// shown is what readers of the events see of a line the session does not take: all of
// it, but a checkpoint's state, which is for nodes alone wherever it is sent.
func shown(msg *protocol.Message) []byte {
	if msg.Type != protocol.TypeCheckpoint {
		return msg.Raw
	}
	return []byte(`{"type":"checkpoint","state":"withheld: a checkpoint's state is for nodes alone"}`)
}
