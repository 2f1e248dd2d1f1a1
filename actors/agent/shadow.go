package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

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
// with the answer that was given, once it has both. A session that ends with the answer
// given and the shadow's still to come hands it to the node's Late, which records it
// when it comes, or without it at its deadline.
type shadowing struct {
	id         string // the request's
	supervisor string
	msg        *protocol.Message
	audit      string // the request's audit id prefix
	deadline   time.Time
	settle     func(why string)
	reply      *wire.Reply // the shadow's, once it answered
	given      *wire.Reply // the answer given, once there is one
	// late is set once the session ended waiting for the shadow: from then on only
	// late touches the shadowing.
	late atomic.Pointer[lateShadow]
}

// askShadow asks route's shadow supervisor about p, as ask (a copy of the request's
// own ask): the request's answer neither waits for it nor ever is it.
func (a *Agent) askShadow(s *session, p *request, route *config.Route, ask wire.Ask, header nats.Header) {
	gen, id := s.gen, p.id
	sh := &shadowing{id: id, supervisor: route.Shadow, msg: p.msg, audit: p.audit, deadline: p.deadline}
	settle, err := a.cfg.Asker.Ask(a.askSubject(route.Shadow), &ask, header, p.deadline, !route.ShadowExternal, func(r *wire.Reply) {
		if route.ShadowExternal {
			r = externalReply(route.Shadow, r)
		}
		if late := sh.late.Load(); late != nil {
			late.deliver(r, "")
			return
		}
		a.send(&shadowArrived{gen: gen, sh: sh, reply: r})
	})
	if err != nil {
		a.log.Warn("shadow supervisor not asked", "session", s.id, "request", id, "shadow", route.Shadow, "err", err)
		return
	}
	sh.settle = settle
	if s.shadows == nil {
		s.shadows = map[string]*shadowing{}
	}
	s.shadows[id] = sh
}

// onShadow keeps a shadow's decision, and records it once its request was answered.
func (a *Agent) onShadow(m *shadowArrived) {
	if late := m.sh.late.Load(); late != nil {
		late.deliver(m.reply, "") // its session ended, waiting for it
		return
	}
	s := a.sess
	if s == nil || s.gen != m.gen || m.sh.reply != nil {
		return // recorded when its session ended
	}
	m.sh.reply = m.reply
	m.sh.settle("")
	if m.sh.given != nil {
		a.recordShadow(s, m.sh)
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
		a.recordShadow(s, sh)
	}
}

// endShadows records the shadow decisions of session s, which ends: those whose answer
// was given and whose shadow may still answer wait for it in the node's Late; the rest
// are recorded as they stand.
func (a *Agent) endShadows(s *session) {
	now := time.Now()
	for id, sh := range s.shadows {
		delete(s.shadows, id)
		if sh.reply == nil && sh.given != nil && now.Before(sh.deadline) && a.cfg.Late != nil {
			a.cfg.Late.wait(sh, a.record(s, "shadow"), a.cfg.Audit, a.cfg.Metrics.Shadow)
			continue
		}
		sh.settle("session ended")
		writeShadow(a.record(s, "shadow"), sh, "no answer from the shadow before the session ended", a.cfg.Audit, a.cfg.Metrics.Shadow)
	}
}

// recordShadow writes the shadow decision sh of session s.
func (a *Agent) recordShadow(s *session, sh *shadowing) {
	delete(s.shadows, sh.id)
	writeShadow(a.record(s, "shadow"), sh, "", a.cfg.Audit, a.cfg.Metrics.Shadow)
}

// writeShadow writes a shadow's decision to the audit as rec (the session's record of
// kind shadow), beside the answer given, and counts whether they agreed; none says why
// there is no decision, if there is none.
func writeShadow(rec *wire.AuditRecord, sh *shadowing, none string, audit func(string, *wire.AuditRecord), counted *prometheus.CounterVec) {
	rec.Request, rec.Type, rec.Text = sh.id, string(sh.msg.Type), sh.msg.RequestText()
	outcome := shadowNone
	switch r := sh.reply; {
	case r == nil:
		rec.Decider = sh.supervisor
		rec.Reason = none
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
	audit(sh.audit+".shadow", rec)
	agreed := map[string]string{shadowAgreed: "true", shadowDisagreed: "false", shadowNone: "none"}[outcome]
	counted.WithLabelValues(sh.supervisor, agreed).Inc()
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
