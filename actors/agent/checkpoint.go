package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/dialect"
	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/wire"
	"github.com/agentmux/agentmux/workspace"
)

// Checkpointer keeps sessions' checkpoints: the node's store.Checkpoints.
type Checkpointer interface {
	Put(ctx context.Context, c *wire.Checkpoint, parts map[string][]byte) error
	// Find is a session's checkpoint seq, its latest with 0 (an error wrapping
	// store.ErrNoCheckpoint: none).
	Find(ctx context.Context, session string, seq int) (*wire.Checkpoint, error)
	// Parts reads a checkpoint's parts, by name.
	Parts(ctx context.Context, c *wire.Checkpoint) (map[string][]byte, error)
}

// checkpointWrite bounds a checkpoint's write to the store.
const checkpointWrite = 30 * time.Second

// checkpointDone is a checkpoint written, or not.
type checkpointDone struct {
	c   *wire.Checkpoint
	err error
	// A transcript's (checkpointTranscript): of the session of generation gen, the
	// transcript as it was kept, or unchanged since the last and not kept again.
	transcript bool
	gen        uint64
	stamp      fileStamp
	unchanged  bool
	// written is set for one that went to be written (Agent.writing counts them).
	written bool
}

// onCheckpoint keeps a native agent's checkpoint of session s: its state and the
// session's place, written to the node's store off the actor. A checkpoint that is not
// kept (the host keeps none, the node has no store, the state is too large) says why
// in a checkpoint.failed event; the one before it stands.
func (a *Agent) onCheckpoint(s *session, msg *protocol.Message) {
	if !a.dialect.Canonical() { // a vendor dialect's mark of its agent's safe point
		a.checkpointTranscript(s, "agent")
		return
	}
	c := &wire.Checkpoint{Session: s.id, Host: a.host.Name, Node: a.cfg.Node, Attempt: s.start.Attempt,
		Time: time.Now().UnixMilli(), Why: "agent", Bytes: int64(len(msg.State))}
	var why string
	switch {
	case !a.host.Checkpoint:
		why = fmt.Sprintf("host %s keeps no checkpoints (checkpoint = false)", a.host.Name)
	case a.cfg.Checkpoints == nil:
		why = "this node keeps no checkpoints"
	case c.Bytes > a.cfg.MaxCheckpointBytes:
		why = fmt.Sprintf("its state is %d bytes, more than [checkpoints] max_checkpoint_bytes (%d)", c.Bytes, a.cfg.MaxCheckpointBytes)
	}
	if why != "" { // seq 0: none taken
		a.onCheckpointDone(&checkpointDone{c: c, err: fmt.Errorf("checkpoint not kept: %s; the one before it stands", why)})
		return
	}
	s.checkpoints++
	c.Seq = s.checkpoints
	parts := map[string][]byte{"state": msg.State, "place": a.place(s)}
	w := a.checkpointWriter()
	a.writing++
	a.off(func(ctx context.Context) {
		a.send(&checkpointDone{c: c, written: true, err: w.write(ctx, c, parts)})
	}, func() { a.send(&checkpointDone{c: c, written: true, err: errNodeStopping}) })
}

// checkpointWriter writes the checkpoints of the running session: its parts, and its
// workspace as it is when written.
type checkpointWriter struct {
	store Checkpointer
	most  int64
	wp    *workspace.Provider // nil: the session has no workspace
	ws    *workspace.Workspace
}

func (a *Agent) checkpointWriter() checkpointWriter {
	w := checkpointWriter{store: a.cfg.Checkpoints, most: a.cfg.MaxCheckpointBytes}
	if a.ws != nil && a.wsState == wsOpen {
		w.wp, w.ws = a.cfg.Workspace, a.ws
	}
	return w
}

// write writes checkpoint c of parts, off the actor, and the workspace's snapshot with
// them; the error says why it was not kept.
func (w checkpointWriter) write(ctx context.Context, c *wire.Checkpoint, parts map[string][]byte) error {
	ctx, cancel := context.WithTimeout(ctx, checkpointWrite)
	defer cancel()
	if w.ws != nil {
		snap, err := w.wp.Snapshot(ctx, w.ws)
		if err != nil {
			return fmt.Errorf("checkpoint not taken: %w; the one before it stands", err)
		}
		parts["workspace"] = snap.Bundle
		c.Workspace = &wire.CheckpointWorkspace{Base: snap.Base, Head: snap.Head, Commit: snap.Commit}
	}
	var size int64
	for _, p := range parts {
		size += int64(len(p))
	}
	if size > w.most {
		c.Bytes = size
		return fmt.Errorf("checkpoint not kept: it is %d bytes, more than [checkpoints] max_checkpoint_bytes (%d); the one before it stands", size, w.most)
	}
	if err := w.store.Put(ctx, c, parts); err != nil {
		return fmt.Errorf("checkpoint not written: %w; the one before it stands", err)
	}
	return nil
}

// place is where session s is, as its checkpoint's place part.
func (a *Agent) place(s *session) []byte {
	st := s.start
	p := wire.SessionPlace{Task: st.Task, Prompt: st.Prompt, By: st.By, Attempt: st.Attempt, Pipeline: st.Pipeline, Stage: st.Stage}
	if st.Previous != nil {
		p.Answers = append(p.Answers, st.Previous.Requests...)
	}
	for _, r := range s.records {
		if r.Outcome == protocol.OutcomeAnswered {
			p.Answers = append(p.Answers, protocol.PriorAnswer{Attempt: st.Attempt, Type: string(r.Type), Text: r.Text, Value: r.Value, Decider: r.Decider})
		}
	}
	p.Spend = s.usage.Spend(a.cfg.Pricing.Cost)
	b, _ := json.Marshal(p)
	return b
}

// onCheckpointDone says whether a checkpoint was kept: an event of its session (which
// may have ended meanwhile), a count, and a warning when it was not. A session to be
// handed over goes once its checkpoint is kept.
func (a *Agent) onCheckpointDone(m *checkpointDone) {
	if !m.transcript || a.onTranscriptDone(m) {
		a.tellCheckpoint(m)
	}
	if m.written {
		a.writing--
		a.afterWrites()
	}
	// A session leaves once its checkpoint is kept; one paused at its limit leaves even
	// when it was not (its agent is stuck there; the checkpoint before stands).
	if s := a.sess; s != nil && s.leave != nil && s.id == m.c.Session && (m.err == nil || s.leave.reason == wire.PausedAtLimit) &&
		!s.saving && (!m.transcript || m.gen == s.gen) {
		a.goAway(s)
	}
}

func (a *Agent) tellCheckpoint(m *checkpointDone) {
	c, typ, outcome := m.c, wire.EventCheckpointSaved, "saved"
	ev := &wire.CheckpointSaved{Seq: c.Seq, Why: c.Why, Bytes: c.Bytes}
	if m.err != nil {
		typ, outcome, ev.Error = wire.EventCheckpointFailed, "failed", m.err.Error()
		a.log.Warn("a session's checkpoint was not kept", "session", c.Session, "err", m.err)
	}
	a.cfg.Metrics.Checkpoints.WithLabelValues(a.host.Name, outcome).Inc()
	if err := bus.PublishEventOn(a.cfg.Conn, wire.EventSubject(a.host.Name, c.Session, typ), a.encode(ev)); err != nil {
		a.shared.events.Inc()
	}
}

// restore makes session s go on from checkpoint r of an earlier attempt: its
// checkpoints go on counting from r's, its events and audit say where it came from,
// and its agent's prompt carries r's state (a native agent's), or its conversation
// goes on (an agent resumed from its transcript). An agent that can do neither starts
// afresh, with its earlier attempts' answers (nil), and the session's events say so.
func (a *Agent) restore(s *session, r *Restored) *protocol.Resume {
	c := r.Checkpoint
	resumed := a.resuming != "" && a.resuming == resumable(a.dialect, r) // its process started resumed
	a.resuming = ""
	if !a.dialect.Canonical() && !resumed {
		a.onCheckpointDone(&checkpointDone{c: &wire.Checkpoint{Session: s.id, Seq: c.Seq, Why: "resume"},
			err: fmt.Errorf("checkpoint %d not used: host %s's agent cannot resume from it; the session starts afresh, with its earlier attempts' answers", c.Seq, a.host.Name)})
		return nil
	}
	s.checkpoints = c.Seq
	why := fmt.Sprintf("brought back on %s from checkpoint %d, taken on %s in attempt %d", a.cfg.Node, c.Seq, c.Node, c.Attempt)
	a.publishOn(s, wire.EventSessionResumed, a.encode(&wire.SessionPaused{Reason: why, Checkpoint: c.Seq}))
	rec := a.record(s, wire.EventSessionResumed)
	rec.Reason = why
	a.cfg.Audit(wire.AuditID(s.id, s.start.Attempt, "resumed"), rec)
	a.cfg.Metrics.Resumed.WithLabelValues(a.host.Name, r.Why).Inc()
	a.log.Info("session brought back from its checkpoint", "session", s.id, "checkpoint", c.Seq, "from", c.Node)
	note := fmt.Sprintf("This session was moved to another node and goes on from your checkpoint %d: what you did after it may not have finished.", c.Seq)
	if !a.dialect.Canonical() {
		note = "This session was moved to another node and goes on from where your conversation was saved: your last tool call may not have finished, and files you changed after it may not be there. Check, then continue the task."
	}
	return &protocol.Resume{Checkpoint: c.Seq, Node: c.Node, Attempt: c.Attempt, State: r.State, Note: note}
}

// resumable is the conversation a session's agent of dialect d resumes from checkpoint
// r: its id, when d's agent keeps its conversation in a file and r holds that file; ""
// otherwise.
func resumable(d dialect.Dialect, r *Restored) string {
	if _, ok := d.(dialect.Transcripts); !ok || r == nil || r.Transcript == nil {
		return ""
	}
	var st conversationState
	if json.Unmarshal(r.State, &st) != nil {
		return ""
	}
	return st.Conversation
}

// sessionArgs are the args of session m's own process: resuming its agent's
// conversation, from m's checkpoint or as m asks.
func (a *Agent) sessionArgs(m *StartSession) []string {
	a.resuming = resumable(a.dialect, m.Restored)
	if a.resuming != "" {
		return a.dialect.SessionArgs(a.resuming)
	}
	return a.dialect.SessionArgs(m.Resume)
}
