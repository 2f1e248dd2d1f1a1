package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/metrics"
	"github.com/agentmux/agentmux/protocol"
)

// session is the state of the session a process is serving.
type session struct {
	id       string
	start    *StartSession
	gen      uint64
	begun    time.Time
	deadline time.Time // zero without a session timeout
	lastLine time.Time
	lines    int
	partial  strings.Builder
	seq      map[protocol.Type]int // runtime-assigned request ids, per type
	requests int                   // requests read, in order: numbers them in the audit
	pending  map[string]*pending
	records  []RequestRecord
	timers   []*time.Timer // session, idle and interrupt timers; stopped when it ends
}

// touch notes a line read; the clock is read only when an idle timeout needs it.
func (s *session) touch(idle bool) {
	if idle {
		s.lastLine = time.Now()
	}
	s.lines++
}

// pending is one request waiting for its answer.
type pending struct {
	msg      *protocol.Message
	id       string
	audit    string // the audit id prefix: session, attempt and the request's sequence
	readAt   time.Time
	deadline time.Time
	def      json.RawMessage
	timer    *time.Timer
	settle   func(why string) // tells the asker the request is settled: stop asking
	claimed  string           // the decider an external supervisor named in its answer
}

func (a *Agent) startSession(m *StartSession) {
	if a.sess != nil || a.stopping || a.exited {
		a.report(&Result{Session: m.Session, Host: a.host.Name, Task: m.Task, Attempt: m.Attempt,
			Error: "agent process is not available", Retryable: true}, m, false)
		return
	}
	if a.state != stateReady {
		a.waiting = m
		if !a.spawned && a.dialect != nil {
			a.spawn(a.dialect.SessionArgs(m.Resume))
		}
		return
	}
	now := time.Now()
	a.served++
	a.gen++
	s := &session{id: m.Session, start: m, gen: a.gen, begun: now, lastLine: now,
		seq: map[protocol.Type]int{}, pending: map[string]*pending{}}
	if t := a.host.Timeout.D(); t > 0 {
		s.deadline = now.Add(t)
		s.timers = append(s.timers, a.after(t, timerSession, s.gen, ""))
	}
	if t := a.host.IdleTimeout.D(); t > 0 {
		s.timers = append(s.timers, a.after(t, timerIdle, s.gen, ""))
	}
	a.sess = s
	a.setState("busy")
	switch {
	case a.dialect != nil:
		a.proc.stdin.write(a.dialect.Prompt(m.Prompt, m.Session))
	case a.host.InputFormat == "text":
		a.proc.stdin.write(protocol.AppendPromptText(nil, m.Prompt))
	default:
		a.proc.stdin.write(protocol.AppendPrompt(nil, m.Prompt, m.Session))
	}
}

func (a *Agent) onLine(msg *protocol.Message) {
	a.countMessage(msg.Type)
	if a.state == stateInitializing {
		a.onInitLine(msg)
		return
	}
	s := a.sess
	if s == nil {
		a.publish("_", string(msg.Type), msg.Raw)
		if msg.Type.IsTerminal() || msg.Type.IsRequest() {
			a.log.Warn("agent sent a message outside any session; dropped", "pid", a.pid(), "type", msg.Type)
		}
		return
	}
	s.touch(a.host.IdleTimeout > 0)
	switch msg.Type {
	case protocol.TypeWithdrawn:
		if p := s.pending[msg.ID]; p != nil {
			a.answer(s, p, nil, protocol.OutcomeCancelled, "agent", "the agent withdrew the request")
		}
		return
	case protocol.TypeQuestion, protocol.TypeApproval, protocol.TypeToolCall:
		a.onRequest(s, msg)
	case protocol.TypePartial:
		s.partial.WriteString(msg.Text)
		a.publish(s.id, string(msg.Type), msg.Raw)
	case protocol.TypeResult:
		a.publish(s.id, string(msg.Type), msg.Raw)
		payload := msg.Raw
		if s.partial.Len() > 0 {
			payload = withField(payload, "partial_output", s.partial.String())
		}
		a.endSession(&Result{OK: true, Payload: payload}, true)
	case protocol.TypeError:
		a.publish(s.id, string(msg.Type), msg.Raw)
		text := msg.Message
		if text == "" {
			text = "agent reported an error without a message"
		}
		a.endSession(&Result{Error: text, Payload: msg.Raw}, true)
	default:
		a.publish(s.id, string(msg.Type), msg.Raw)
	}
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

func (a *Agent) onRequest(s *session, msg *protocol.Message) {
	id := msg.ID
	if id == "" {
		s.seq[msg.Type]++
		id = string(msg.Type) + "-" + strconv.Itoa(s.seq[msg.Type])
	}
	_, dup := s.pending[id]
	var raw []byte
	if !dup {
		raw = msg.WithID(id)
		a.publish(s.id, string(msg.Type), raw)
	}
	now := time.Now()
	s.requests++
	p := &pending{msg: msg, id: id, readAt: now, def: a.defaultFor(msg),
		audit: bus.AuditID(s.id, s.start.Attempt, "r"+strconv.Itoa(s.requests))}
	a.cfg.Audit(p.audit+".request", &bus.AuditRecord{Kind: "request", Time: now.UnixMilli(), Node: a.cfg.Node,
		Host: a.host.Name, Session: s.id, Attempt: s.start.Attempt, Request: id, Type: string(msg.Type), Text: msg.RequestText()})
	if dup {
		// The first request keeps waiting; this one is answered at once, invalid.
		err := fmt.Errorf("request id %q is already waiting for an answer; ids must be unique among outstanding requests", id)
		a.onFrameError(&frameError{reason: "duplicate_id", size: len(msg.Raw), err: err})
		a.respond(s, p, p.def, protocol.OutcomeInvalid, "runtime", err.Error())
		return
	}

	route := a.cfg.Routes.Match(a.host.Name, string(msg.Type), msg.RequestText())
	if route == nil {
		s.pending[id] = p
		a.answer(s, p, p.def, protocol.OutcomeAnswered, "default", "no route matched")
		return
	}
	timeout := a.host.QuestionTimeout.D()
	if msg.Timeout > 0 {
		timeout = time.Duration(msg.Timeout) * time.Millisecond
	}
	if !s.deadline.IsZero() {
		timeout = min(timeout, max(time.Until(s.deadline), 0))
	}
	p.deadline = now.Add(timeout)
	s.pending[id] = p
	p.timer = a.after(timeout, timerRequest, s.gen, id)
	data, _ := json.Marshal(&bus.Ask{Session: s.id, Host: a.host.Name, Type: string(msg.Type), ID: id,
		Text: msg.RequestText(), Deadline: p.deadline.UnixMilli(), Default: p.def, Request: raw, PostProcess: route.PostProcess,
		Node: a.cfg.Node, Attempt: s.start.Attempt})
	req := &nats.Msg{Subject: bus.AskSubject(route.Supervisor), Data: data, Header: nats.Header{
		bus.HeaderSession:  []string{s.id},
		bus.HeaderRequest:  []string{id},
		bus.HeaderHost:     []string{a.host.Name},
		bus.HeaderDeadline: []string{strconv.FormatInt(p.deadline.UnixMilli(), 10)},
	}}
	gen, session, attempt := s.gen, s.id, s.start.Attempt
	p.settle = a.cfg.Asker.Ask(req, p.deadline, route.Failover, func(r *bus.Reply) {
		if route.External {
			r = externalReply(route.Supervisor, r)
		}
		a.send(&answerArrived{gen: gen, session: session, attempt: attempt, id: id, reply: r})
	})
}

// externalReply records what an external supervisor answered as its own, and the
// decider it named as its claim: no process outside the nodes can speak for a rule, a
// model or a person.
func externalReply(supervisor string, r *bus.Reply) *bus.Reply {
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
	}
	v, _ := json.Marshal(map[string]string{"error": "no such tool: " + msg.Tool})
	return v
}

func (a *Agent) onAnswer(m *answerArrived) {
	s := a.sess
	var p *pending
	if s != nil && s.gen == m.gen {
		p = s.pending[m.id]
	}
	if p == nil {
		a.refuseAnswer(m)
		return
	}
	r := m.reply
	p.claimed = r.Claimed
	switch {
	case r.UseDefault:
		a.answer(s, p, p.def, protocol.OutcomeAnswered, r.Decider, r.Reason)
	case r.Cancelled:
		a.answer(s, p, p.def, protocol.OutcomeAnswered, r.Decider, "supervisor declined: "+r.Reason)
	default:
		value := normalize(p.msg, r.Value)
		if err := protocol.ValidateAnswer(p.msg, value); err != nil {
			a.answer(s, p, p.def, protocol.OutcomeInvalid, r.Decider, err.Error())
			return
		}
		a.answer(s, p, value, protocol.OutcomeAnswered, r.Decider, r.Reason)
	}
}

// refuseAnswer reports an answer that came after the request's first answer, its
// default or its end: counted as late, and audited as refused with who sent it.
func (a *Agent) refuseAnswer(m *answerArrived) {
	a.cfg.Metrics.LateAnswers.WithLabelValues(a.host.Name).Inc()
	r := m.reply
	a.log.Info("answer refused: the request was already settled", "session", m.session, "request", m.id, "decider", r.Decider, "member", r.Member)
	a.cfg.Audit(bus.AuditID(m.session, m.attempt, m.id+".refused."+nuid.Next()), &bus.AuditRecord{Kind: "answer.refused",
		Time: time.Now().UnixMilli(), Node: a.cfg.Node, Host: a.host.Name, Session: m.session, Attempt: m.attempt, Request: m.id,
		Value: r.Value, Decider: r.Decider, Claimed: r.Claimed, Member: r.Member, Reason: "the request was already answered, timed out or ended; first answer wins"})
}

// normalize accepts true and false for approvals without options.
func normalize(m *protocol.Message, v json.RawMessage) json.RawMessage {
	if m.Type == protocol.TypeApproval && len(m.Options) == 0 {
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
func (a *Agent) answer(s *session, p *pending, value json.RawMessage, outcome protocol.Outcome, decider, reason string) {
	delete(s.pending, p.id)
	if p.timer != nil {
		p.timer.Stop()
	}
	if p.settle != nil {
		// The asker listens on past the deadline, so late answers are reported; a
		// request given up on is withdrawn from a person deciding it.
		why := ""
		if outcome != protocol.OutcomeAnswered && outcome != protocol.OutcomeInvalid {
			why = fmt.Sprintf("%s: %s", outcome, reason)
		}
		p.settle(why)
	}
	a.respond(s, p, value, outcome, decider, reason)
}

// respond writes the response to p, when the process lives, and records it: metrics,
// the request.answered event and the audit. An invalid response says why.
func (a *Agent) respond(s *session, p *pending, value json.RawMessage, outcome protocol.Outcome, decider, reason string) {
	if !a.exited && a.proc != nil {
		resp := protocol.Response{InReplyTo: p.msg.Type, ID: p.id, Value: value, Outcome: outcome}
		if outcome == protocol.OutcomeInvalid {
			resp.Reason = reason
		}
		if a.dialect == nil {
			a.proc.stdin.write(protocol.AppendResponse(nil, resp))
		} else if reply := a.dialect.Answer(p.msg, resp, reason); reply != nil {
			a.proc.stdin.write(reply)
		}
	}
	wait := time.Since(p.readAt)
	a.cfg.Metrics.Requests.WithLabelValues(a.host.Name, string(p.msg.Type), string(outcome)).Inc()
	a.cfg.Metrics.Answers.WithLabelValues(a.host.Name, metrics.DeciderKind(decider)).Inc()
	a.cfg.Metrics.RequestWait.WithLabelValues(string(p.msg.Type)).Observe(wait.Seconds())
	s.records = append(s.records, RequestRecord{ID: p.id, Type: p.msg.Type, Outcome: outcome, Decider: decider, Latency: wait})
	ms := float64(wait.Microseconds()) / 1000
	data, _ := json.Marshal(&bus.RequestAnswered{ID: p.id, Type: string(p.msg.Type), Value: value, Outcome: string(outcome), Decider: decider, Claimed: p.claimed, Reason: reason, Latency: ms})
	a.publish(s.id, EventRequestAnswered, data)
	a.cfg.Audit(p.audit+".answer", &bus.AuditRecord{Kind: "answer", Time: time.Now().UnixMilli(), Node: a.cfg.Node,
		Host: a.host.Name, Session: s.id, Attempt: s.start.Attempt, Request: p.id, Type: string(p.msg.Type), Value: value,
		Outcome: string(outcome), Decider: decider, Claimed: p.claimed, Reason: reason, Latency: ms})
}

func (a *Agent) onSessionTimer(m *timerFired) {
	s := a.sess
	if s == nil || s.gen != m.gen {
		return
	}
	switch m.kind {
	case timerRequest:
		if p := s.pending[m.id]; p != nil {
			a.answer(s, p, p.def, protocol.OutcomeTimedOut, "default", fmt.Sprintf("no answer within %v", p.deadline.Sub(p.readAt).Round(time.Millisecond)))
		}
	case timerSession:
		a.timeOut(fmt.Sprintf("session timed out after %v", a.host.Timeout.D()))
	case timerIdle:
		idle := a.host.IdleTimeout.D()
		if quiet := time.Since(s.lastLine); quiet < idle {
			s.timers = append(s.timers, a.after(idle-quiet, timerIdle, s.gen, ""))
			return
		}
		a.timeOut(fmt.Sprintf("session timed out after %v without output", idle))
	case timerInterrupt:
		a.endSession(&Result{Error: "session interrupted: the agent did not stop in time"}, false)
		a.stop()
	}
}

// timeOut ends the session on a timer: interrupt, then stop the process.
func (a *Agent) timeOut(text string) {
	if a.caps["interrupt"] {
		a.proc.stdin.write(a.interruptLine(text))
	}
	a.endSession(&Result{Error: text}, false)
	a.stop()
}

func (a *Agent) interrupt(reason string) *Delivery {
	s := a.sess
	if s == nil {
		return &Delivery{Error: "the session has already ended"}
	}
	if a.caps["interrupt"] && !a.stopping {
		a.proc.stdin.write(a.interruptLine(reason))
		s.timers = append(s.timers, a.after(a.host.StopGrace.D(), timerInterrupt, s.gen, ""))
		return &Delivery{OK: true, Effect: fmt.Sprintf("interrupt written; the agent has %v to end the session", a.host.StopGrace.D())}
	}
	a.endSession(&Result{Error: "session interrupted: " + reason}, false)
	a.stop()
	return &Delivery{OK: true, Effect: "the agent did not declare interrupt: session ended and process stopped"}
}

func (a *Agent) sendMessage(text string) *Delivery {
	switch {
	case a.sess == nil || a.stopping:
		return &Delivery{Error: "the session has already ended"}
	case !a.caps["message"]:
		return &Delivery{Error: fmt.Sprintf("host '%s' did not declare the message capability in init_ack; its agent cannot take messages", a.host.Name)}
	}
	if a.dialect != nil {
		a.proc.stdin.write(a.dialect.Message(text))
	} else {
		a.proc.stdin.write(protocol.AppendMessageLine(nil, text))
	}
	return &Delivery{OK: true, Effect: "message written"}
}

func (a *Agent) shutdown(reason string) {
	a.failWaiting("runtime shutting down: " + reason)
	if s := a.sess; s != nil {
		if a.caps["interrupt"] {
			a.proc.stdin.write(a.interruptLine(reason))
		}
		a.endSession(&Result{Error: "runtime shutting down: " + reason}, false)
	}
	a.stop()
}

// endSession ends the current session with r: every pending request is answered
// "cancelled" (written while the process lives), and the parent is told.
func (a *Agent) endSession(r *Result, reusable bool) {
	s := a.sess
	if s == nil {
		return
	}
	for _, p := range s.pending {
		a.answer(s, p, nil, protocol.OutcomeCancelled, "runtime", "session ended")
	}
	for _, t := range s.timers {
		t.Stop()
	}
	a.sess = nil
	a.gen++ // retires this session's timers
	r.Session, r.Host, r.Task, r.Attempt = s.id, a.host.Name, s.start.Task, s.start.Attempt
	r.Duration = time.Since(s.start.Started)
	r.Requests = s.records
	oneShot := a.dialect != nil && !a.dialect.Reusable()
	reusable = reusable && !a.stopping && !a.exited && !oneShot
	if reusable {
		a.setState("idle")
	}
	a.report(r, s.start, reusable)
	if oneShot {
		a.stop() // the router counts on a process it cannot reuse to go
	}
}

// withField returns the JSON object obj with key set to the string value.
func withField(obj json.RawMessage, key, value string) json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		return obj
	}
	v, _ := json.Marshal(value)
	m[key] = v
	out, err := json.Marshal(m)
	if err != nil {
		return obj
	}
	return out
}

func (a *Agent) interruptLine(reason string) []byte {
	if a.dialect != nil {
		return a.dialect.Interrupt(reason)
	}
	return protocol.AppendInterrupt(nil, reason)
}

// onRawLine decodes a dialect process's line into canonical messages.
func (a *Agent) onRawLine(line []byte) {
	msgs, reply, err := a.dialect.Decode(line)
	if reply != nil && a.proc != nil && !a.exited {
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
