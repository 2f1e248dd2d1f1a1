package agent

import (
	"fmt"
	"net/http"
	"time"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/dialect"
	"github.com/agentmux/agentmux/wire"
)

// A session whose task can go back to the work queue (StartSession.Requeue) leaves its
// process at a checkpoint to go on from it: on another node, as its node drains
// (Handover), or later, when its provider's usage limit resets (paused). It goes once a
// checkpoint is kept: at once for an agent whose conversation the node checkpoints, at
// its next checkpoint line for a native agent that hands over, and at once from its
// latest for one that is paused at a limit (it is stuck there); one paused by hand goes
// as one handed over does.

// leaving is why a session leaves, and till when it is paused (zero: handed over) and
// for what (wire.PausedAtLimit, wire.PausedByHand).
type leaving struct {
	why    string
	until  time.Time
	reason string
}

// onHandover has the session handed to another node, or paused (m.Until), at its next
// safe point. One that cannot be checkpointed runs on, and the answer says why.
func (a *Agent) onHandover(m *Handover) *wire.Delivery {
	s, what := a.sess, "handed over"
	if !m.Until.IsZero() {
		what = "paused"
	}
	switch {
	case s == nil:
		return &wire.Delivery{Error: "the session has already ended"}
	case s.leave != nil:
		return &wire.Delivery{Error: "the session is already leaving its process: " + s.leave.why}
	case !s.start.Requeue:
		return &wire.Delivery{Error: "the session was not queued (agentmux run, a pipeline's stage): it has no task to go on from, and cannot be " + what}
	case !a.host.Checkpoint || a.cfg.Checkpoints == nil:
		return &wire.Delivery{Error: fmt.Sprintf("host %s keeps no checkpoints (checkpoint = false, or no store): its session cannot be %s", a.host.Name, what)}
	}
	l := &leaving{why: m.Reason}
	if !m.Until.IsZero() {
		l.until, l.reason = m.Until, wire.PausedByHand
	}
	switch t, ok := a.dialect.(dialect.Transcripts); {
	case a.dialect.Canonical():
		s.leave = l
		return &wire.Delivery{OK: true, Effect: what + " at the agent's next checkpoint line"}
	case ok && t.Conversation() != "":
		s.leave = l
		a.checkpointTranscript(s, "handover")
		return &wire.Delivery{OK: true, Effect: what + " once its conversation is checkpointed, now"}
	}
	return &wire.Delivery{Error: fmt.Sprintf("host %s's agent has no conversation a node can carry yet (or its dialect keeps none): its session cannot be %s", a.host.Name, what)}
}

// atLimit pauses session s when its provider answered a model call through the gateway
// 429 (status) with a reset config.OnLimitWait or more ahead.
func (a *Agent) atLimit(s *session, status int, wait time.Duration, connection string) {
	if status == http.StatusTooManyRequests {
		a.limited(s, wait, fmt.Sprintf("usage limit: connection %s's provider asks to wait %v", connection, wait.Round(time.Second)))
	}
}

// limited pauses session s at its provider's limit, which lifts in wait (why says
// whose), when that is config.OnLimitWait or more ahead and its host pauses at a limit
// (the agent retries a shorter wait itself); a wait past the host's max_pause ends the
// session instead.
func (a *Agent) limited(s *session, wait time.Duration, why string) {
	if wait < config.OnLimitWait || a.host.OnLimit != config.OnLimitPause || !s.start.Requeue || s.leave != nil {
		return
	}
	if max := a.host.MaxPause.D(); wait > max {
		a.endSession(&Result{Error: fmt.Sprintf("%s, more than host %s's max_pause (%v); raise max_pause to pause it", why, a.host.Name, max)}, false)
		return
	}
	s.leave = &leaving{why: why, until: time.Now().Add(wait), reason: wire.PausedAtLimit}
	if t, ok := a.dialect.(dialect.Transcripts); ok && t.Conversation() != "" && a.host.Checkpoint && a.cfg.Checkpoints != nil {
		a.checkpointTranscript(s, "limit")
		return
	}
	a.goAway(s) // its latest checkpoint stands, if any
}

// goAway ends session s, whose checkpoint was just kept, for it to go on from there:
// its process is stopped and its task goes back to the queue, for another node now or
// for when it is no longer paused.
func (a *Agent) goAway(s *session) {
	l := s.leave
	a.log.Info("session leaves at its checkpoint", "session", s.id, "checkpoint", s.checkpoints, "why", l.why, "until", l.until)
	if a.caps["interrupt"] && a.phase == phaseBusy {
		a.proc.stdin.write(a.interruptLine(l.why))
	}
	if l.until.IsZero() {
		a.endSession(&Result{Error: fmt.Sprintf("handed to another node at checkpoint %d: %s", s.checkpoints, l.why), HandedOver: true}, false)
		return
	}
	ev := a.encode(&wire.SessionPaused{Reason: l.why, Checkpoint: s.checkpoints, Until: l.until.UnixMilli()})
	a.publishOn(s, wire.EventSessionPaused, ev)
	rec := a.record(s, wire.EventSessionPaused)
	rec.Reason, rec.Value = l.why, ev
	a.cfg.Audit(wire.AuditID(s.id, s.start.Attempt, "paused"), rec)
	a.cfg.Metrics.Paused.WithLabelValues(a.host.Name, l.reason).Inc()
	paused := &wire.PausedSession{Session: s.id, Host: a.host.Name, Task: s.start.Task, Reason: l.reason, Why: l.why, Until: l.until.UnixMilli(),
		Since: time.Now().UnixMilli(), Checkpoint: s.checkpoints, Node: a.cfg.Node, Attempt: s.start.Attempt}
	a.endSession(&Result{Error: fmt.Sprintf("paused at checkpoint %d until %s: %s", s.checkpoints, l.until.UTC().Format(time.RFC3339), l.why), Paused: paused}, false)
}
