package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/metrics"
	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/wire"
)

// request is one request of the agent's, from when it is read to its answer.
type request struct {
	msg      *protocol.Message
	id       string
	audit    string // the audit id prefix: session, attempt and the request's sequence
	readAt   time.Time
	deadline time.Time
	def      json.RawMessage
	settle   func(why string) // tells the asker the request is settled: stop asking
	claimed  string           // the decider an external supervisor named in its answer
	scope    string           // what the answer was given for beyond this request: session, host
	trace    context.Context  // its span's, when traced
	span     trace.Span       // nil when not traced

	// What the request stages found on its way (stages.go).
	raw       []byte                   // as published, with its id
	conflicts []wire.WorkspaceConflict // other sessions editing what it would
	route     *config.Route            // the route it is asked by
}

// newRequest numbers a request read in session s; the runtime names one sent without an id.
func (a *Agent) newRequest(s *session, msg *protocol.Message) *request {
	id := msg.ID
	if id == "" {
		s.seq[msg.Type]++
		id = string(msg.Type) + "-" + strconv.Itoa(s.seq[msg.Type])
	}
	s.requests++
	readAt := a.readAt // a line's request: when the line was read off stdout
	if readAt.IsZero() {
		readAt = time.Now()
	}
	return &request{msg: msg, id: id, readAt: readAt, def: a.defaultFor(msg),
		audit: wire.AuditID(s.id, s.start.Attempt, "r"+strconv.Itoa(s.requests))}
}

func (a *Agent) requestRecord(s *session, p *request) *wire.AuditRecord {
	r := a.record(s, "request")
	r.Request, r.Type, r.Text, r.Ask = p.id, string(p.msg.Type), p.msg.RequestText(), p.msg.Raw
	return r
}

// onRequest takes a request of the agent's through the request stages, in order,
// until one answers it or asks for its answer.
func (a *Agent) onRequest(s *session, msg *protocol.Message) {
	a.pokeMeasure()
	a.checkpointTranscript(s, "request") // the agent waits: a safe point
	p := a.newRequest(s, msg)
	a.startRequestSpan(s, p)
	for _, st := range requestStages() {
		if st.run(a, s, p) {
			return
		}
	}
}

// askSubject is the subject of supervisor's asks, made once.
func (a *Agent) askSubject(supervisor string) string {
	sub, ok := a.asks[supervisor]
	if !ok {
		if a.asks == nil {
			a.asks = map[string]string{}
		}
		sub = wire.AskSubject(supervisor)
		a.asks[supervisor] = sub
	}
	return sub
}

// externalReply records what an external supervisor answered as its own, and the
// decider it named as its claim: no process outside the nodes can speak for a rule, a
// model or a person.
func externalReply(supervisor string, r *wire.Reply) *wire.Reply {
	c := *r
	c.Decider, c.Claimed = "external:"+supervisor, r.Decider
	return &c
}

func (a *Agent) defaultFor(msg *protocol.Message) json.RawMessage {
	switch msg.Type {
	case protocol.TypeQuestion:
		if len(msg.Default) > 0 {
			return msg.Default
		}
		return a.host.QuestionDefaultJSON
	case protocol.TypeApproval:
		return a.host.ApprovalDefaultJSON
	case protocol.TypeBudget:
		return json.RawMessage(`"no"`)
	}
	v, _ := json.Marshal(map[string]string{"error": "no such tool: " + msg.Tool})
	return v
}

func (a *Agent) onAnswer(m *answerArrived) {
	s := a.sess
	var p *request
	if s != nil && s.gen == m.gen {
		p = s.open[m.id]
	}
	if p == nil {
		a.refuseAnswer(m)
		return
	}
	r := m.reply
	p.claimed = r.Claimed
	switch r.Kind {
	// A supervisor that passes or declines decides nothing: the value is the host's
	// default, said to be one, and the reason names the supervisor.
	case wire.ReplyDefault:
		a.answer(s, p, p.def, protocol.OutcomeDefaulted, "default", r.Decider+": "+r.Reason)
	case wire.ReplyCancelled:
		a.answer(s, p, p.def, protocol.OutcomeDefaulted, "default", r.Decider+" declined: "+r.Reason)
	default:
		value, scope := normalize(p.msg, r.Value), r.Scope
		if v, forSession := wire.ForSession(string(p.msg.Type), r.Value); forSession != "" {
			value, scope = v, forSession
		}
		if err := protocol.ValidateAnswer(p.msg, value); err != nil {
			a.answer(s, p, p.def, protocol.OutcomeInvalid, r.Decider, err.Error())
			return
		}
		reason := r.Reason
		switch scope {
		case wire.ScopeSession:
			if s.standing == nil {
				s.standing = map[string]standing{}
			}
			s.standing[standingKey(p.msg)] = standing{value: value, decider: r.Decider, grant: r.Grant}
			reason = strings.TrimPrefix(reason+"; for the rest of the session", "; ")
			p.scope = scope
		case wire.ScopeHost:
			reason = strings.TrimPrefix(fmt.Sprintf("%s; for every session of host %s for %v", reason, a.host.Name, wire.HostGrantFor), "; ")
			p.scope = scope
		case wire.ScopeRule:
			p.scope = scope // the rule is in the rules file; the reason names it
		}
		a.answer(s, p, value, protocol.OutcomeAnswered, r.Decider, reason)
	}
}

// grantReason says which grant answered a request, and until when.
func grantReason(g *wire.Grant) string {
	if g.Scope == wire.ScopeHost {
		return fmt.Sprintf("approved for every session of host %s by %s until %s (%s)", g.Host, g.By, g.Expires.Format(time.TimeOnly), g.ID)
	}
	return fmt.Sprintf("approved for this session by %s (%s)", g.By, g.ID)
}

// refuseAnswer reports an answer that came after the request's first answer, its
// default or its end: counted as late, and audited as refused with who sent it.
func (a *Agent) refuseAnswer(m *answerArrived) {
	a.cfg.Metrics.LateAnswers.WithLabelValues(a.host.Name).Inc()
	r := m.reply
	a.log.Info("answer refused: the request was already settled", "session", m.session, "request", m.id, "decider", r.Decider, "member", r.Member)
	a.cfg.Audit(wire.AuditID(m.session, m.attempt, m.id+".refused."+nuid.Next()), &wire.AuditRecord{Kind: "answer.refused",
		Time: time.Now().UnixMilli(), Node: a.cfg.Node, Host: a.host.Name, Session: m.session, Attempt: m.attempt, Request: m.id,
		Value: r.Value, Decider: r.Decider, Claimed: r.Claimed, Member: r.Member, Reason: "the request was already answered, timed out or ended; first answer wins"})
}

// normalize accepts true and false for approvals without options.
func normalize(m *protocol.Message, v json.RawMessage) json.RawMessage {
	if m.Type == protocol.TypeBudget || m.Type == protocol.TypeApproval && len(m.Options) == 0 {
		switch string(bytes.TrimSpace(v)) {
		case "true":
			return json.RawMessage(`"yes"`)
		case "false":
			return json.RawMessage(`"no"`)
		}
	}
	return v
}

// answer ends request p: it writes exactly one response line while the process lives.
func (a *Agent) answer(s *session, p *request, value json.RawMessage, outcome protocol.Outcome, decider, reason string) {
	delete(s.open, p.id)
	a.dropAnswered(s)
	if p.settle != nil {
		// The asker listens on past the deadline, so late answers are reported; a
		// request given up on is withdrawn from a person deciding it.
		why := ""
		if outcome == protocol.OutcomeTimedOut || outcome == protocol.OutcomeCancelled {
			why = fmt.Sprintf("%s: %s", outcome, reason)
		}
		p.settle(why)
	}
	a.respond(s, p, value, outcome, decider, reason)
}

// respond writes the response to p, when the process lives, and records it: metrics,
// the request.answered event and the audit. An invalid response says why.
func (a *Agent) respond(s *session, p *request, value json.RawMessage, outcome protocol.Outcome, decider, reason string) {
	if a.phase.live() && p.msg.Type != protocol.TypeBudget { // the runtime's own: nothing to write
		// The reason goes with every answer that has one: a person's --reason, a rule's
		// or a model's words, why a default was written or an answer did not fit.
		resp := protocol.Response{InReplyTo: p.msg.Type, ID: p.id, Value: value, Outcome: outcome, Reason: reason}
		if reply := a.dialect.Answer(p.msg, resp, reason); reply != nil {
			a.proc.stdin.write(reply)
		}
		if outcome != protocol.OutcomeCancelled {
			a.checkpointTranscript(s, "answer")
		}
	}
	endRequestSpan(p, outcome, decider)
	wait := time.Since(p.readAt)
	a.shared.request(p.msg.Type, outcome, metrics.DeciderKind(decider), wait)
	s.records = append(s.records, RequestRecord{ID: p.id, Type: p.msg.Type, Text: p.msg.RequestText(), Value: value, Outcome: outcome, Decider: decider, Latency: wait})
	ms := float64(wait.Microseconds()) / 1000
	ev := wire.RequestAnswered{ID: p.id, Type: string(p.msg.Type), Value: value, Outcome: string(outcome), Decider: decider, Claimed: p.claimed, Reason: reason, Latency: ms}
	a.scratch = ev.AppendJSON(a.scratch[:0]) // the publish copies it
	a.publishOn(s, wire.EventRequestAnswered, a.scratch)
	rec := a.record(s, "answer")
	rec.Request, rec.Type, rec.Value, rec.Outcome, rec.Decider, rec.Claimed, rec.Reason, rec.Latency, rec.Scope =
		p.id, string(p.msg.Type), value, string(outcome), decider, p.claimed, reason, ms, p.scope
	a.cfg.Audit(p.audit+".answer", rec)
	a.shadowGiven(s, p.id, value, decider)
	if p.msg.Type == protocol.TypeBudget {
		a.budgetAnswered(s, value, outcome, decider)
	}
}
