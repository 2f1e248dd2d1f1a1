package agent

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/wire"
)

// Outcomes of a shadow record: how the shadow's decision compares with the answer given.
const (
	shadowAgreed    = "agreed"
	shadowDisagreed = "disagreed"
	shadowNone      = "no_answer"
)

// shadowing is a request's shadow decision: asked of its route's shadow supervisor
// beside its own supervisor, within the same deadline, and never given. It is recorded,
// with the answer that was given, once it has both (or its session ends).
type shadowing struct {
	supervisor string
	msg        *protocol.Message
	audit      string // the request's audit id prefix
	settle     func(why string)
	reply      *wire.Reply // the shadow's, once it answered
	given      *wire.Reply // the answer given, once there is one
}

// askShadow asks route's shadow supervisor about p, as ask (a copy of the request's
// own ask): the request's answer neither waits for it nor ever is it.
func (a *Agent) askShadow(s *session, p *pending, route *config.Route, ask wire.Ask, header nats.Header) {
	gen, session, id := s.gen, s.id, p.id
	settle, err := a.cfg.Asker.Ask(a.askSubject(route.Shadow), &ask, header, p.deadline, !route.ShadowExternal, func(r *wire.Reply) {
		if route.ShadowExternal {
			r = externalReply(route.Shadow, r)
		}
		a.send(&shadowArrived{gen: gen, session: session, id: id, reply: r})
	})
	if err != nil {
		a.log.Warn("shadow supervisor not asked", "session", s.id, "request", id, "shadow", route.Shadow, "err", err)
		return
	}
	if s.shadows == nil {
		s.shadows = map[string]*shadowing{}
	}
	s.shadows[id] = &shadowing{supervisor: route.Shadow, msg: p.msg, audit: p.audit, settle: settle}
}

// onShadow keeps a shadow's decision, and records it once its request was answered.
func (a *Agent) onShadow(m *shadowArrived) {
	s := a.sess
	if s == nil || s.gen != m.gen {
		return // its session ended, and recorded it without an answer
	}
	sh := s.shadows[m.id]
	if sh == nil || sh.reply != nil {
		return
	}
	sh.reply = m.reply
	sh.settle("")
	if sh.given != nil {
		a.recordShadow(s, m.id, sh)
	}
}

// shadowGiven notes the answer given to request id, recording its shadow's decision
// if it has one.
func (a *Agent) shadowGiven(s *session, id string, value json.RawMessage, decider string) {
	sh := s.shadows[id]
	if sh == nil {
		return
	}
	sh.given = &wire.Reply{Value: value, Decider: decider}
	if sh.reply != nil {
		a.recordShadow(s, id, sh)
	}
}

// endShadows records the shadows of session s that gave no answer: it ends.
func (a *Agent) endShadows(s *session) {
	for id, sh := range s.shadows {
		sh.settle("session ended")
		a.recordShadow(s, id, sh)
	}
}

// recordShadow writes a shadow's decision to the audit beside the answer given, and
// counts whether they agreed.
func (a *Agent) recordShadow(s *session, id string, sh *shadowing) {
	delete(s.shadows, id)
	rec := a.record(s, "shadow")
	rec.Request, rec.Type, rec.Text = id, string(sh.msg.Type), sh.msg.RequestText()
	outcome := shadowNone
	switch r := sh.reply; {
	case r == nil:
		rec.Decider = sh.supervisor
		rec.Reason = "no answer from the shadow before the session ended"
	case r.Kind != wire.ReplyValue || len(r.Value) == 0:
		rec.Decider = r.Decider
		rec.Reason = "the shadow decided nothing: " + r.Reason
	default:
		rec.Value, rec.Decider = normalize(sh.msg, r.Value), r.Decider
		if v, scope := wire.ForSession(string(sh.msg.Type), rec.Value); scope != "" {
			rec.Value = v
		}
		outcome = shadowDisagreed
		if sh.given != nil && sameAnswer(rec.Value, sh.given.Value) {
			outcome = shadowAgreed
		}
	}
	switch g := sh.given; {
	case g == nil:
	case len(g.Value) == 0:
		rec.Reason = "no answer was given (" + g.Decider + ")" + suffix(rec.Reason)
	default:
		rec.Given, rec.GivenBy = g.Value, g.Decider
		rec.Reason = fmt.Sprintf("given %s by %s", g.Value, g.Decider) + suffix(rec.Reason)
	}
	rec.Outcome = outcome
	a.cfg.Audit(sh.audit+".shadow", rec)
	agreed := map[string]string{shadowAgreed: "true", shadowDisagreed: "false", shadowNone: "none"}[outcome]
	a.cfg.Metrics.Shadow.WithLabelValues(sh.supervisor, agreed).Inc()
}

// sameAnswer reports whether two answers are the same JSON.
func sameAnswer(a, b json.RawMessage) bool {
	var x, y bytes.Buffer
	if json.Compact(&x, a) != nil || json.Compact(&y, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(x.Bytes(), y.Bytes())
}

func suffix(s string) string {
	if s == "" {
		return ""
	}
	return "; " + s
}
