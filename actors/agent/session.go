package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nuid"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/due"
	"github.com/agentmux/agentmux/metrics"
	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/wire"
)

// session is the state of the session a process is serving.
type session struct {
	id        string
	start     *StartSession
	gen       uint64
	begun     time.Time
	deadline  time.Time // zero without a session timeout
	lastLine  time.Time
	lines     int
	partial   strings.Builder
	seq       map[protocol.Type]int // runtime-assigned request ids, per type
	requests  int                   // requests read, in order: numbers them in the audit
	pending   map[string]*pending
	records   []RequestRecord
	timers    []*time.Timer // session, idle and interrupt timers; stopped when it ends
	due       due.Heap      // request deadlines by id (Agent.requests is armed for the soonest)
	result    *config.ResultSpec
	reprompts int // new prompts sent for results that did not fit the schema
	// standing are answers given for the rest of the session, by request type and text.
	standing map[string]standing
	subjects map[string]string // event subjects, by type (a message's or an event's)
	sink     *streamSink       // where the stdout reader publishes stream lines itself
}

// standing is an answer that stands for the same request later in its session.
type standing struct {
	value   json.RawMessage
	decider string
}

func standingKey(m *protocol.Message) string { return string(m.Type) + "\x00" + m.RequestText() }

// standingFor is the answer standing for m, if any (without a key made in the common
// case: none stands).
func (s *session) standingFor(m *protocol.Message) (standing, bool) {
	if len(s.standing) == 0 {
		return standing{}, false
	}
	st, ok := s.standing[standingKey(m)]
	return st, ok
}

// record starts an audit record of this session.
func (a *Agent) record(s *session, kind string) *wire.AuditRecord {
	return &wire.AuditRecord{Kind: kind, Time: time.Now().UnixMilli(), Node: a.cfg.Node, Host: a.host.Name, Session: s.id,
		Attempt: s.start.Attempt, Pipeline: s.start.Pipeline, Stage: s.start.Stage}
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
	settle   func(why string) // tells the asker the request is settled: stop asking
	claimed  string           // the decider an external supervisor named in its answer
}

func (a *Agent) startSession(m *StartSession) {
	switch {
	case a.phase == phaseIdle:
	case a.phase < phaseIdle && a.waiting == nil:
		a.waiting = m // started once the process is ready
		if a.phase == phaseUnspawned {
			a.spawn(a.dialect.SessionArgs(m.Resume))
		}
		return
	default:
		a.report(&Result{Session: m.Session, Host: a.host.Name, Task: m.Task, Attempt: m.Attempt,
			Error: "agent process is not available", Retryable: true}, m, false)
		return
	}
	now := time.Now()
	a.served++
	a.gen++
	s := &session{id: m.Session, start: m, gen: a.gen, begun: now, lastLine: now,
		seq: map[protocol.Type]int{}, pending: map[string]*pending{}, result: m.Result}
	if s.result == nil {
		s.result = a.host.Result
	}
	if t := a.host.Timeout.D(); t > 0 {
		s.deadline = now.Add(t)
		s.timers = append(s.timers, a.after(t, timerSession, s.gen))
	}
	if t := a.host.IdleTimeout.D(); t > 0 {
		s.timers = append(s.timers, a.after(t, timerIdle, s.gen))
	}
	a.sess = s
	a.to(phaseBusy)
	a.openStream(s)
	switch {
	case a.dialect != nil:
		a.proc.stdin.write(a.dialect.Prompt(m.Prompt+previousText(m.Previous), m.Session))
	case a.host.InputFormat == "text":
		a.proc.stdin.write(protocol.AppendPromptText(nil, m.Prompt+previousText(m.Previous)))
	case m.Previous != nil:
		a.proc.stdin.write(protocol.AppendPromptWith(nil, protocol.Prompt{Text: m.Prompt, Session: m.Session, PreviousAttempt: m.Previous}))
	default:
		a.proc.stdin.write(protocol.AppendPrompt(nil, m.Prompt, m.Session))
	}
}

func (a *Agent) onLine(msg *protocol.Message) {
	a.countMessage(msg.Type)
	if a.phase == phaseInitializing {
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
	if msg.Type == protocol.TypeUnhandled || !a.host.Sends(string(msg.Type)) {
		a.unhandled(s, msg)
		return
	}
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
		a.publishOn(s, string(msg.Type), msg.Raw)
	case protocol.TypeResult:
		a.publishOn(s, string(msg.Type), msg.Raw)
		a.onResult(s, msg)
	case protocol.TypeError:
		a.publishOn(s, string(msg.Type), msg.Raw)
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
		a.cfg.Metrics.PublishErrors.WithLabelValues("event").Inc()
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

// newPending numbers a request read in session s; the runtime names one sent without an id.
func (a *Agent) newPending(s *session, msg *protocol.Message) *pending {
	id := msg.ID
	if id == "" {
		s.seq[msg.Type]++
		id = string(msg.Type) + "-" + strconv.Itoa(s.seq[msg.Type])
	}
	s.requests++
	return &pending{msg: msg, id: id, readAt: time.Now(), def: a.defaultFor(msg),
		audit: wire.AuditID(s.id, s.start.Attempt, "r"+strconv.Itoa(s.requests))}
}

func (a *Agent) requestRecord(s *session, p *pending) *wire.AuditRecord {
	r := a.record(s, "request")
	r.Request, r.Type, r.Text = p.id, string(p.msg.Type), p.msg.RequestText()
	return r
}

func (a *Agent) onRequest(s *session, msg *protocol.Message) {
	p := a.newPending(s, msg)
	id := p.id
	_, dup := s.pending[id]
	var raw []byte
	if !dup {
		raw = msg.WithID(id)
		a.publishOn(s, string(msg.Type), raw)
	}
	a.cfg.Audit(p.audit+".request", a.requestRecord(s, p))
	if dup {
		// The first request keeps waiting; this one is answered at once, invalid.
		err := fmt.Errorf("request id %q is already waiting for an answer; ids must be unique among outstanding requests", id)
		a.onFrameError(&frameError{reason: "duplicate_id", size: len(msg.Raw), err: err})
		a.respond(s, p, p.def, protocol.OutcomeInvalid, "runtime", err.Error())
		return
	}
	if prior := s.start.Previous.Find(string(msg.Type), msg.RequestText()); prior != nil && protocol.ValidateAnswer(msg, prior.Value) == nil {
		// Asked and answered in an earlier attempt: the same answer again, at once.
		s.pending[id] = p
		a.answer(s, p, prior.Value, protocol.OutcomeAnswered, "replay:"+prior.Decider,
			fmt.Sprintf("answered so in attempt %d by %s", prior.Attempt, prior.Decider))
		return
	}
	if st, ok := s.standingFor(msg); ok {
		s.pending[id] = p
		a.answer(s, p, st.value, protocol.OutcomeAnswered, "session:"+st.decider, "approved for this session by "+st.decider)
		return
	}
	now := p.readAt
	route := s.start.Routes.Match(a.host.Name, string(msg.Type), msg.RequestText())
	if route == nil {
		route = a.cfg.Routes.Match(a.host.Name, string(msg.Type), msg.RequestText())
	}
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
	// No headers: the body says it all, and headers cost more to write and read than
	// the rest of the message.
	ask := &wire.Ask{Session: s.id, Host: a.host.Name, Type: string(msg.Type), ID: id,
		Text: msg.RequestText(), Default: p.def, Request: raw, PostProcess: route.PostProcess,
		Node: a.cfg.Node, Attempt: s.start.Attempt}
	gen, session, attempt := s.gen, s.id, s.start.Attempt
	settle, err := a.cfg.Asker.Ask(a.askSubject(route.Supervisor), ask, p.deadline, route.Failover, func(r *wire.Reply) {
		if route.External {
			r = externalReply(route.Supervisor, r)
		}
		a.send(&answerArrived{gen: gen, session: session, attempt: attempt, id: id, reply: r})
	})
	if err != nil {
		// No supervisor could be sent it: its default now, not after its deadline.
		a.answer(s, p, p.def, protocol.OutcomeAnswered, "default", err.Error()+": no supervisor can be asked; its default")
		return
	}
	p.settle = settle
	a.dueAt(s, p.deadline, id)
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
		value, scope := normalize(p.msg, r.Value), r.Scope
		if p.msg.Type == protocol.TypeApproval && string(bytes.TrimSpace(r.Value)) == `"yes for session"` {
			value, scope = json.RawMessage(`"yes"`), wire.ScopeSession
		}
		if err := protocol.ValidateAnswer(p.msg, value); err != nil {
			a.answer(s, p, p.def, protocol.OutcomeInvalid, r.Decider, err.Error())
			return
		}
		reason := r.Reason
		if scope == wire.ScopeSession {
			if s.standing == nil {
				s.standing = map[string]standing{}
			}
			s.standing[standingKey(p.msg)] = standing{value: value, decider: r.Decider}
			reason = strings.TrimPrefix(reason+"; for the rest of the session", "; ")
		}
		a.answer(s, p, value, protocol.OutcomeAnswered, r.Decider, reason)
	}
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
	s.dropAnswered()
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
	if a.phase.live() {
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
	a.counted.request(a.cfg.Metrics, a.host.Name, p.msg.Type, outcome, metrics.DeciderKind(decider), wait)
	s.records = append(s.records, RequestRecord{ID: p.id, Type: p.msg.Type, Text: p.msg.RequestText(), Value: value, Outcome: outcome, Decider: decider, Latency: wait})
	ms := float64(wait.Microseconds()) / 1000
	ev := wire.RequestAnswered{ID: p.id, Type: string(p.msg.Type), Value: value, Outcome: string(outcome), Decider: decider, Claimed: p.claimed, Reason: reason, Latency: ms}
	a.scratch = ev.AppendJSON(a.scratch[:0]) // the publish copies it
	a.publishOn(s, EventRequestAnswered, a.scratch)
	rec := a.record(s, "answer")
	rec.Request, rec.Type, rec.Value, rec.Outcome, rec.Decider, rec.Claimed, rec.Reason, rec.Latency =
		p.id, string(p.msg.Type), value, string(outcome), decider, p.claimed, reason, ms
	a.cfg.Audit(p.audit+".answer", rec)
}

func (a *Agent) onSessionTimer(m *timerFired) {
	s := a.sess
	if s == nil || s.gen != m.gen {
		return
	}
	switch m.kind {
	case timerSession:
		a.timeOut(fmt.Sprintf("session timed out after %v", a.host.Timeout.D()))
	case timerIdle:
		idle := a.host.IdleTimeout.D()
		last := s.lastLine
		if s.sink != nil {
			if direct := time.Unix(0, s.sink.lastLine.Load()); direct.After(last) {
				last = direct // the reader published the last line itself
			}
		}
		if quiet := time.Since(last); quiet < idle {
			s.timers = append(s.timers, a.after(idle-quiet, timerIdle, s.gen))
			return
		}
		a.timeOut(fmt.Sprintf("session timed out after %v without output", idle))
	case timerInterrupt:
		a.endSession(&Result{Error: "session interrupted: the agent did not stop in time"}, false)
	}
}

// timeOut ends the session on a timer: interrupt, then stop the process.
func (a *Agent) timeOut(text string) {
	if a.caps["interrupt"] {
		a.proc.stdin.write(a.interruptLine(text))
	}
	a.endSession(&Result{Error: text}, false)
}

func (a *Agent) interrupt(reason string) *Delivery {
	s := a.sess
	if s == nil {
		return &Delivery{Error: "the session has already ended"}
	}
	if a.caps["interrupt"] && a.phase == phaseBusy {
		a.proc.stdin.write(a.interruptLine(reason))
		s.timers = append(s.timers, a.after(a.host.StopGrace.D(), timerInterrupt, s.gen))
		return &Delivery{OK: true, Effect: fmt.Sprintf("interrupt written; the agent has %v to end the session", a.host.StopGrace.D())}
	}
	a.endSession(&Result{Error: "session interrupted: " + reason}, false)
	return &Delivery{OK: true, Effect: "the agent did not declare interrupt: session ended and process stopped"}
}

func (a *Agent) sendMessage(text string) *Delivery {
	switch {
	case a.sess == nil:
		return &Delivery{Error: "the session has already ended"}
	case a.phase != phaseBusy:
		return &Delivery{Error: "the agent process has exited; its session is ending"}
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
// "cancelled" (written while the process lives), and the parent is told. Unless the
// process can take another session, it is stopped: the router counts on a process it
// cannot reuse to go.
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
	a.closeStream()
	a.gen++ // retires this session's timers
	r.Session, r.Host, r.Task, r.Attempt = s.id, a.host.Name, s.start.Task, s.start.Attempt
	r.Duration = time.Since(s.start.Started)
	r.Requests = s.records
	oneShot := a.dialect != nil && !a.dialect.Reusable()
	reusable = reusable && a.phase == phaseBusy && !oneShot
	if reusable {
		a.to(phaseIdle)
	}
	a.report(r, s.start, reusable)
	if !reusable {
		a.stop()
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
	a.publishOn(s, string(protocol.TypeUnhandled), msg.Raw)
	if !msg.Type.IsRequest() {
		return
	}
	p := a.newPending(s, msg)
	a.cfg.Audit(p.audit+".request", a.requestRecord(s, p))
	a.respond(s, p, p.def, protocol.OutcomeInvalid, "runtime",
		fmt.Sprintf("host %q does not declare %s in its messages; the request was not routed", a.host.Name, msg.Type))
}

// previousText tells an agent that takes plain text what the earlier attempts did.
func previousText(prev *protocol.PreviousAttempt) string {
	if prev == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n\nAn earlier attempt of this task (attempt %d) failed: %s", prev.Attempt, prev.Error)
	if len(prev.Requests) > 0 {
		b.WriteString("\nIt had asked, and was answered:")
		for _, r := range prev.Requests {
			fmt.Fprintf(&b, "\n- %s %q: %s (by %s)", r.Type, r.Text, r.Value, r.Decider)
		}
	}
	return b.String()
}

// onResult ends the session with its result. A typed session's result must fit its
// schema: one that does not gets a new prompt on the same process, saying what was
// wrong, until the session's result retries are spent; then the session ends in error.
func (a *Agent) onResult(s *session, msg *protocol.Message) {
	payload := msg.Raw
	if s.partial.Len() > 0 {
		payload = withField(payload, "partial_output", s.partial.String())
	}
	text := msg.Text
	if text == "" {
		text = s.partial.String() // ACP's result is its streamed text
	}
	res := &Result{OK: true, Payload: payload, Text: text}
	if s.result == nil {
		a.endSession(res, true)
		return
	}
	data, err := typedResult(msg.Raw, text, s.result.Schema)
	h := a.host.Name
	switch {
	case err == nil:
		a.cfg.Metrics.ResultChecks.WithLabelValues(h, "fit").Inc()
		res.Data = data
		a.endSession(res, true)
	case s.reprompts < s.result.Retries && a.phase == phaseBusy:
		s.reprompts++
		a.cfg.Metrics.ResultChecks.WithLabelValues(h, "reprompted").Inc()
		ev, _ := json.Marshal(struct {
			Error    string `json:"error"`
			Reprompt int    `json:"reprompt"`
			Of       int    `json:"of"`
		}{err.Error(), s.reprompts, s.result.Retries})
		a.publishOn(s, EventResultInvalid, ev)
		s.partial.Reset() // the next turn's text is the next result's
		a.reprompt(s, err)
	default:
		a.cfg.Metrics.ResultChecks.WithLabelValues(h, "failed").Inc()
		why := fmt.Sprintf("the result does not fit the schema: %v", err)
		if s.reprompts > 0 {
			why = fmt.Sprintf("the result does not fit the schema after %d new prompts: %v", s.reprompts, err)
		}
		a.endSession(&Result{Error: why, Payload: payload, Text: text}, true)
	}
}

// reprompt asks the agent, in the same conversation, for a result that fits.
func (a *Agent) reprompt(s *session, why error) {
	text := fmt.Sprintf("Your result does not fit the required JSON Schema: %v. Reply with the result again as one JSON object that fits this schema, and nothing else: %s", why, s.result.Schema)
	switch {
	case a.dialect != nil:
		a.proc.stdin.write(a.dialect.Continue(text))
	case a.host.InputFormat == "text":
		a.proc.stdin.write(protocol.AppendPromptText(nil, text))
	default:
		a.proc.stdin.write(protocol.AppendPromptWith(nil, protocol.Prompt{Text: text, Session: s.id, Schema: s.result.Schema, SchemaError: why.Error()}))
	}
}

// typedResult is a result's JSON: the data field of its raw message, or its text parsed
// as JSON (inside a ```json fence or not), checked against schema.
func typedResult(raw []byte, text string, schema json.RawMessage) (json.RawMessage, error) {
	var fields struct {
		Data json.RawMessage `json:"data"`
	}
	_ = json.Unmarshal(raw, &fields)
	data := fields.Data
	if len(data) == 0 || string(data) == "null" {
		data = json.RawMessage(unfence(text))
		if !json.Valid(data) {
			return nil, fmt.Errorf("the result is not JSON: neither a data field nor a text that parses (%q)", cutLine(text, 120))
		}
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("the result is not JSON: %w", err)
	}
	if err := protocol.CheckSchema(schema, v); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if json.Compact(&b, data) != nil {
		return data, nil
	}
	return b.Bytes(), nil
}

// unfence returns the body of the first ``` code fence in text, or text trimmed.
func unfence(text string) string {
	t := strings.TrimSpace(text)
	start := strings.Index(t, "```")
	if start < 0 {
		return t
	}
	body := t[start+3:]
	if nl := strings.IndexByte(body, '\n'); nl >= 0 {
		body = body[nl+1:] // the fence's language tag
	}
	if end := strings.Index(body, "```"); end >= 0 {
		body = body[:end]
	}
	return strings.TrimSpace(body)
}
