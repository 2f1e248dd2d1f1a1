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
// latest for one that is paused (it is stuck at the limit).

// leaving is why a session leaves, and till when it is paused (zero: handed over).
type leaving struct {
	why   string
	until time.Time
}

// onHandover has the session handed to another node at its next safe point. One whose
// host keeps no checkpoints runs on.
func (a *Agent) onHandover(m *Handover) {
	s := a.sess
	if s == nil || s.leave != nil || !s.start.Requeue || !a.host.Checkpoint || a.cfg.Checkpoints == nil {
		return
	}
	switch t, ok := a.dialect.(dialect.Transcripts); {
	case a.dialect.Canonical():
		s.leave = &leaving{why: m.Reason}
	case ok && t.Conversation() != "":
		s.leave = &leaving{why: m.Reason}
		a.checkpointTranscript(s, "handover")
	}
}

// atLimit pauses session s when its provider answered a model call 429 with a reset
// config.OnLimitWait or more ahead, and its host pauses at a limit; a reset past the
// host's max_pause ends the session instead.
func (a *Agent) atLimit(s *session, status int, wait time.Duration, connection string) {
	if status != http.StatusTooManyRequests || wait < config.OnLimitWait || a.host.OnLimit != config.OnLimitPause || !s.start.Requeue || s.leave != nil {
		return
	}
	why := fmt.Sprintf("usage limit: connection %s's provider asks to wait %v", connection, wait.Round(time.Second))
	if max := a.host.MaxPause.D(); wait > max {
		a.endSession(&Result{Error: fmt.Sprintf("%s, more than host %s's max_pause (%v); raise max_pause to pause it", why, a.host.Name, max)}, false)
		return
	}
	s.leave = &leaving{why: why, until: time.Now().Add(wait)}
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
	if a.caps["interrupt"] {
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
	a.cfg.Metrics.Paused.WithLabelValues(a.host.Name, "limit").Inc()
	a.endSession(&Result{Error: fmt.Sprintf("paused at checkpoint %d until %s: %s", s.checkpoints, l.until.UTC().Format(time.RFC3339), l.why), PausedUntil: l.until}, false)
}
