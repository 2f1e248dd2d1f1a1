package agent

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/due"
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
	open      map[string]*request   // its requests waiting for their answer, by id
	shadows   map[string]*shadowing // requests whose shadow decision is not recorded yet
	records   []RequestRecord
	timers    []*time.Timer // session, idle and interrupt timers; stopped when it ends
	due       due.Heap      // request deadlines by id (Agent.requests is armed for the soonest)
	result    *config.ResultSpec
	reprompts int // new prompts sent for results that did not fit the schema
	// standing are answers given for the rest of the session, by request type and text.
	standing map[string]standing
	subjects map[string]string // event subjects, by type (a message's or an event's)
	sink     *streamSink       // where the stdout reader publishes stream lines itself
	usage    wire.Tally        // what its model calls cost: as the gateway measured it, or the agent reported it
	claimed  wire.Tally        // what the agent reported, behind the gateway: a claim beside the measured
	calls    int               // its model calls through the gateway so far
	// checkpoints is how many it took: the seq of its latest. An agent's transcript
	// (checkpointTranscript) is being kept while saving, with the safe point met
	// meanwhile in again; saved is the transcript last kept, and missingSaid whether
	// its absence was said.
	checkpoints int
	saving      bool
	again       string
	saved       fileStamp
	missingSaid bool
	// leave is why and till when the session goes once its next checkpoint is kept
	// (nil: it stays): to another node, or paused (leave.go).
	leave  *leaving
	budget *budget         // nil: no budget
	trace  context.Context // its span's, when traced (Config.Tracer)
	span   trace.Span      // nil when not traced
}

// standing is an answer that stands for the same request later in its session.
type standing struct {
	value   json.RawMessage
	decider string
	grant   string // the grant a person's answer gave: revoked, it no longer stands
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

// startSession starts session m on the idle process: its timers, its stream, and the
// prompt written in the host's protocol.
func (a *Agent) startSession(m *StartSession) {
	switch {
	case a.phase == phaseIdle:
	case a.phase < phaseIdle && a.waiting == nil:
		a.waiting = m // started once the process is ready
		a.waitTrace, a.waitSpan = a.sessionSpan(m)
		switch {
		case a.phase != phaseUnspawned:
		case a.cfg.Workspace != nil:
			a.openWorkspace(m) // the process starts in it
		default:
			a.spawn(a.sessionArgs(m))
		}
		return
	default:
		a.report(&Result{Session: m.Session, Host: a.host.Name, Task: m.Task, Attempt: m.Attempt,
			Error: "agent process is not available", Retryable: true}, m, false)
		return
	}
	if id := resumable(a.dialect, m.Restored); id != "" && a.resuming != id {
		a.placeTranscript(m, id) // on the running process: its transcript first
		return
	}
	now := time.Now()
	a.served++
	a.gen++
	s := &session{id: m.Session, start: m, gen: a.gen, begun: now, lastLine: now,
		seq: map[protocol.Type]int{}, open: map[string]*request{}, result: m.Result}
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
	a.everyInterval(s)
	if a.waitSpan != nil { // begun before its process started
		s.trace, s.span = a.waitTrace, a.waitSpan
		a.waitTrace, a.waitSpan = nil, nil
	} else {
		s.trace, s.span = a.sessionSpan(m)
	}
	a.sess = s
	a.pass.Bind(s.id, s.trace)
	a.to(phaseBusy)
	a.openStream(s)
	prompt := protocol.Prompt{Text: m.Prompt, Session: m.Session, PreviousAttempt: m.Previous}
	if m.Restored != nil {
		prompt.Resume = a.restore(s, m.Restored)
	}
	a.proc.stdin.write(a.dialect.Prompt(tracedPrompt(s, prompt)))
	a.startBudget(s)
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
	for _, p := range s.open {
		a.answer(s, p, nil, protocol.OutcomeCancelled, "runtime", "session ended")
	}
	a.endShadows(s)
	a.unhold(s, "", "runtime", "session ended while it was paused at its budget")
	for _, t := range s.timers {
		t.Stop()
	}
	a.sess = nil
	a.pass.Bind("", nil) // its token is refused until the next session
	a.countClaims(s)
	a.closeStream()
	a.gen++ // retires this session's timers
	r.Session, r.Host, r.Task, r.Attempt = s.id, a.host.Name, s.start.Task, s.start.Attempt
	endSpan(s.span, r)
	r.Duration = time.Since(s.start.Started)
	r.Requests = s.records
	if !s.usage.Empty() {
		r.Usage = &s.usage
	}
	if s.budget != nil {
		r.Raises = s.budget.raises
	}
	oneShot := !a.dialect.Reusable() || a.cfg.Workspace != nil
	// A process told to pause, or interrupted for it, may still wait for its resume:
	// the next session gets a fresh one.
	held := s.budget != nil && (s.budget.paused != "" || s.budget.interrupted || s.budget.stopped)
	reusable = reusable && a.phase == phaseBusy && !oneShot && !held
	if reusable {
		a.to(phaseIdle)
	}
	a.report(r, s.start, reusable)
	if !reusable {
		a.stop()
	}
}
