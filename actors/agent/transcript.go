package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/agentmux/agentmux/dialect"
	"github.com/agentmux/agentmux/wire"
)

// The checkpoints of an agent that keeps its conversation in a file of its own
// (dialect.Transcripts, Claude Code): its transcript, its conversation's id and the
// session's place, taken at the session's safe points (the agent's, a request asked,
// an answer written) and every checkpoint_interval, and put back where the agent looks
// for it when the session is brought back on another node.

// conversationState is a transcript checkpoint's state part.
type conversationState struct {
	Conversation string `json:"conversation"`
}

// fileStamp is a transcript as it was when last kept: one unchanged since is not kept
// again.
type fileStamp struct {
	size int64
	mod  time.Time
}

// checkpointTranscript checkpoints session s at a safe point (why), off the actor. One
// is written at a time; a safe point meanwhile is taken once it is done.
func (a *Agent) checkpointTranscript(s *session, why string) {
	t, ok := a.dialect.(dialect.Transcripts)
	if !ok || !a.host.Checkpoint || a.cfg.Checkpoints == nil || t.Conversation() == "" {
		return
	}
	if s.saving {
		s.again = why
		return
	}
	s.saving = true
	id := t.Conversation()
	c := &wire.Checkpoint{Session: s.id, Seq: s.checkpoints + 1, Host: a.host.Name, Node: a.cfg.Node, Attempt: s.start.Attempt,
		Time: time.Now().UnixMilli(), Why: why}
	state, _ := json.Marshal(conversationState{Conversation: id})
	place, h, dir, last, w := a.place(s), a.host, a.workDir(), s.saved, a.checkpointWriter()
	// The agent writes its transcript when it likes: one not there yet is said once,
	// at an interval checkpoint, when it should have been written long since.
	sayMissing, gen := why == "interval" && !s.missingSaid, s.gen
	a.writing++
	a.off(func(ctx context.Context) {
		done := &checkpointDone{c: c, gen: gen, transcript: true, written: true}
		path := t.Transcript(env(h), dialect.RealDir(dir), id)
		body, stamp, err := readTranscript(path, last, w.most)
		switch {
		case errors.Is(err, fs.ErrNotExist) && !sayMissing:
			done.unchanged = true
		case err != nil:
			done.err = fmt.Errorf("checkpoint not taken: %w; the one before it stands", err)
		case body == nil:
			done.unchanged = true
		default:
			done.stamp = stamp
			done.err = w.write(ctx, c, map[string][]byte{"state": state, "transcript": body, "place": place})
		}
		a.send(done)
	}, func() {
		a.send(&checkpointDone{c: c, gen: gen, transcript: true, written: true, err: errNodeStopping})
	})
}

// everyInterval arms session s's next interval checkpoint, for an agent that keeps its
// conversation in a file, when its host has a checkpoint_interval.
func (a *Agent) everyInterval(s *session) {
	if _, ok := a.dialect.(dialect.Transcripts); ok && a.host.Checkpoint && a.cfg.Checkpoints != nil && a.host.CheckpointInterval > 0 {
		s.timers = append(s.timers, a.after(a.host.CheckpointInterval.D(), timerCheckpoint, s.gen))
	}
}

// onTranscriptDone takes the next safe point of the session a transcript checkpoint
// was of, if it still runs, and reports whether the checkpoint is to be told of.
func (a *Agent) onTranscriptDone(m *checkpointDone) bool {
	if s := a.sess; s != nil && s.gen == m.gen {
		s.saving = false
		s.missingSaid = s.missingSaid || errors.Is(m.err, fs.ErrNotExist)
		if m.err == nil && !m.unchanged {
			s.checkpoints, s.saved = m.c.Seq, m.stamp
		}
		if why := s.again; why != "" {
			s.again = ""
			a.checkpointTranscript(s, why)
		}
	}
	return !m.unchanged
}

// readTranscript reads the transcript at path up to its last whole line (the agent
// may be writing the next), or nil when it is as last was.
func readTranscript(path string, last fileStamp, most int64) ([]byte, fileStamp, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fileStamp{}, fmt.Errorf("the agent's transcript is not at %s, where it would keep it with the host's environment (does its command set CLAUDE_CONFIG_DIR or HOME apart from the host's env?): %w", path, fs.ErrNotExist)
	case err != nil:
		return nil, fileStamp{}, fmt.Errorf("the agent's transcript: %w", err)
	}
	stamp := fileStamp{size: fi.Size(), mod: fi.ModTime()}
	if stamp == last {
		return nil, stamp, nil
	}
	if stamp.size > most {
		return nil, stamp, fmt.Errorf("the agent's transcript is %d bytes, more than [checkpoints] max_checkpoint_bytes (%d)", stamp.size, most)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, stamp, fmt.Errorf("the agent's transcript: %w", err)
	}
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[:i+1]
	}
	return b, stamp, nil
}

// transcriptToPut is what puts the transcript of the waiting session's checkpoint where
// its agent, about to start in dir resumed from it (sessionArgs), looks for it; a no-op
// without one.
func (a *Agent) transcriptToPut(dir string) func() error {
	w := a.waiting
	if w == nil || a.resuming == "" {
		return func() error { return nil }
	}
	t, id, body, e := a.dialect.(dialect.Transcripts), a.resuming, w.Restored.Transcript, env(a.host)
	return func() error { return putTranscript(t, e, dir, id, body) }
}

// transcriptPlaced is a session's transcript put in place for the running process to
// resume it (err: not).
type transcriptPlaced struct {
	m   *StartSession
	id  string
	err error
}

// placeTranscript puts the transcript of m's checkpoint where the running process's
// agent looks for conversation id, off the actor, then starts m.
func (a *Agent) placeTranscript(m *StartSession, id string) {
	t, body, e, dir := a.dialect.(dialect.Transcripts), m.Restored.Transcript, env(a.host), a.workDir()
	a.off(func(context.Context) {
		a.send(&transcriptPlaced{m: m, id: id, err: putTranscript(t, e, dir, id, body)})
	}, func() { a.send(&transcriptPlaced{m: m, id: id, err: errNodeStopping}) })
}

// onTranscriptPlaced starts the session whose transcript was put in place; one that
// could not be starts afresh, and its events say why.
func (a *Agent) onTranscriptPlaced(m *transcriptPlaced) {
	if m.err != nil {
		a.onCheckpointDone(&checkpointDone{c: &wire.Checkpoint{Session: m.m.Session, Seq: m.m.Restored.Checkpoint.Seq, Why: "resume"},
			err: fmt.Errorf("the conversation of checkpoint %d was not put back: %w; the session starts afresh, with its earlier attempts' answers", m.m.Restored.Checkpoint.Seq, m.err)})
		m.m.Restored = nil
	} else {
		a.resuming = m.id
	}
	a.startSession(m.m)
}

// putTranscript writes a checkpoint's transcript where the agent, working in dir with
// environment env, looks for conversation id.
func putTranscript(t dialect.Transcripts, env []string, dir, id string, body []byte) error {
	dir = dialect.RealDir(dir)
	path := t.Transcript(env, dir, id)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("agent: the resumed conversation's folder: %w", err)
	}
	if p, ok := t.(dialect.TranscriptPlacer); ok {
		if err := p.Place(env, dir, path); err != nil {
			return fmt.Errorf("agent: ready the resumed conversation's place: %w", err)
		}
	}
	if err := os.WriteFile(path, body, 0o600); err != nil {
		return fmt.Errorf("agent: write the resumed conversation's transcript: %w", err)
	}
	return nil
}
