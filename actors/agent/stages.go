package agent

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/tracing"
	"github.com/agentmux/agentmux/wire"
)

// stage is one step of a request's way to its answer. It answers the request and
// returns true, or passes it on, perhaps having noted on it what later stages use.
type stage struct {
	name string
	run  func(a *Agent, s *session, p *request) (answered bool)
}

// requestStages are the stages every request passes, in order: each capability that
// answers or annotates requests is one of them.
func requestStages() [7]stage {
	return [...]stage{
		{"published", (*Agent).published},
		{"replayed", (*Agent).replayed},
		{"session answers", (*Agent).answeredForSession},
		{"grants", (*Agent).granted},
		{"conflict radar", (*Agent).conflicting},
		{"routes", (*Agent).routed},
		{"supervisor", (*Agent).asked},
	}
}

// published puts the request on its session's subject and in the audit; a request
// whose id is already waiting is answered at once, invalid, and the first one waits on.
func (a *Agent) published(s *session, p *request) bool {
	_, dup := s.open[p.id]
	if !dup {
		p.raw = p.msg.WithID(p.id)
		a.publishOn(s, string(p.msg.Type), p.raw)
	}
	a.cfg.Audit(p.audit+".request", a.requestRecord(s, p))
	if !dup {
		return false
	}
	err := fmt.Errorf("request id %q is already waiting for an answer; ids must be unique among outstanding requests", p.id)
	a.onFrameError(&frameError{reason: "duplicate_id", size: len(p.msg.Raw), err: err})
	a.respond(s, p, p.def, protocol.OutcomeInvalid, "runtime", err.Error())
	return true
}

// replayed answers a request asked and answered in an earlier attempt of the session
// with the same answer, at once.
func (a *Agent) replayed(s *session, p *request) bool {
	prior := s.start.Previous.Find(string(p.msg.Type), p.msg.RequestText())
	if prior == nil || protocol.ValidateAnswer(p.msg, prior.Value) != nil {
		return false
	}
	s.open[p.id] = p
	a.answer(s, p, prior.Value, protocol.OutcomeAnswered, "replay:"+prior.Decider,
		fmt.Sprintf("answered so in attempt %d by %s", prior.Attempt, prior.Decider))
	return true
}

// answeredForSession answers a request a person approved for the whole session,
// unless that grant was revoked since.
func (a *Agent) answeredForSession(s *session, p *request) bool {
	st, ok := s.standingFor(p.msg)
	if !ok || st.grant != "" && a.cfg.Grants != nil && a.cfg.Grants.Revoked(st.grant) {
		return false
	}
	s.open[p.id] = p
	a.answer(s, p, st.value, protocol.OutcomeAnswered, "session:"+st.decider, "approved for this session by "+st.decider)
	return true
}

// granted answers a request the fleet's grants answer: a person's answer for this
// session or for its host, standing.
func (a *Agent) granted(s *session, p *request) bool {
	if a.cfg.Grants == nil {
		return false
	}
	g := a.cfg.Grants.Find(a.host.Name, s.id, string(p.msg.Type), p.msg.RequestText(), p.readAt)
	if g == nil {
		return false
	}
	s.open[p.id] = p
	a.answer(s, p, g.Value, protocol.OutcomeAnswered, g.Scope+":"+g.By, grantReason(g))
	return true
}

// conflicting notes, for an approval of a session with a workspace, the other
// sessions editing what it would: routes may send those to a supervisor of their own.
func (a *Agent) conflicting(s *session, p *request) bool {
	if a.ws != nil && p.msg.Type == protocol.TypeApproval {
		p.conflicts = a.editing(s, p.raw)
	}
	return false
}

// routed notes the route the request goes by (the session's own first, then the
// manifest's, as promotions leave it); with none, it is answered its default.
func (a *Agent) routed(s *session, p *request) bool {
	typ, text, conflict := string(p.msg.Type), p.msg.RequestText(), len(p.conflicts) > 0
	route := s.start.Routes.Match(a.host.Name, typ, text, conflict)
	if route == nil {
		route = a.cfg.Routes.Match(a.host.Name, typ, text, conflict)
	}
	if p.route = route.Effective(a.cfg.Promoted); p.route != nil {
		return false
	}
	s.open[p.id] = p
	a.answer(s, p, p.def, protocol.OutcomeDefaulted, "default", "no route matched")
	return true
}

// asked sends the request to its route's supervisor, due by its deadline (the host's
// question_timeout, the request's own, within the session's), and to its shadow. A
// request no supervisor can be sent is answered its default now.
func (a *Agent) asked(s *session, p *request) bool {
	route, msg, id := p.route, p.msg, p.id
	timeout := a.host.QuestionTimeout.D()
	if msg.Timeout > 0 {
		timeout = time.Duration(msg.Timeout) * time.Millisecond
	}
	if !s.deadline.IsZero() {
		timeout = min(timeout, max(time.Until(s.deadline), 0))
	}
	p.deadline = p.readAt.Add(timeout)
	s.open[id] = p
	// No headers: the body says it all, and headers cost more to write and read than
	// the rest of the message.
	ask := &wire.Ask{Session: s.id, Host: a.host.Name, Type: string(msg.Type), ID: id,
		Text: msg.RequestText(), Default: p.def, Request: p.raw, PostProcess: route.PostProcess,
		Node: a.cfg.Node, Attempt: s.start.Attempt, Conflicts: p.conflicts}
	gen, session, attempt := s.gen, s.id, s.start.Attempt
	var header nats.Header
	if p.span != nil {
		header = tracing.Header(p.trace)
	}
	var shadow wire.Ask
	if route.Shadow != "" {
		shadow = *ask // the Asker owns the one it is given
	}
	settle, err := a.cfg.Asker.Ask(a.askSubject(route.Supervisor), ask, header, p.deadline, route.Failover, func(r *wire.Reply) {
		if route.External {
			r = externalReply(route.Supervisor, r)
		}
		a.send(&answerArrived{gen: gen, session: session, attempt: attempt, id: id, reply: r})
	})
	if err != nil {
		// No supervisor could be sent it: its default now, not after its deadline.
		a.answer(s, p, p.def, protocol.OutcomeDefaulted, "default", err.Error()+": no supervisor can be asked; its default")
		return true
	}
	p.settle = settle
	a.dueAt(s, p.deadline, id)
	if route.Shadow != "" {
		a.askShadow(s, p, route, shadow, header)
	}
	return true
}
