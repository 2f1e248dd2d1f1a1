package router

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// A paused session's task waits in the work queue, nak'd until the pause is over, and
// its entry in the fleet's paused sessions (store.Paused) says why and until when.
// `agentmux resume` queues a copy of the task to go on now and hands the entry to it
// (its Copy); the waiting task, when it comes, is then superseded. The entry is the
// lock: the delivery that runs the session removes it, from the revision it read.

// pauseRecheck is how soon a copy whose entry is not yet handed to it is delivered again
// the first time, doubled each time after up to pauseRecheckMost: the entry is handed
// over within moments, unless the node that queued the copy went first, and then the
// copy waits for the waiting task's time (up to max_pause), which supersedes it.
const (
	pauseRecheck     = time.Second
	pauseRecheckMost = time.Minute
)

// recheckAfter is how soon a copy delivered the nth time is delivered again.
func recheckAfter(n uint64) time.Duration {
	d := pauseRecheck
	for ; n > 1 && d < pauseRecheckMost; n-- {
		d *= 2
	}
	return min(d, pauseRecheckMost)
}

// aimRecheck is how soon a task for another node (wire.Task.Node) is delivered again.
const aimRecheck = time.Second

// forAnother reports a task resumed on another node by hand that is still that node's
// to take at now: queued less than wire.TaskAimedFor before (wire.Task.Node).
func (r *Router) forAnother(task *wire.Task, msg jetstream.Msg, now time.Time) bool {
	if task.Node == "" || task.Node == r.cfg.Node {
		return false
	}
	meta, err := msg.Metadata()
	return err == nil && now.Sub(meta.Timestamp) < wire.TaskAimedFor
}

// pauseVerdict is what becomes of a delivery of a task whose session may be paused.
type pauseVerdict int

const (
	runs       pauseVerdict = iota // it runs
	superseded                     // another delivery of the session runs: dropped
	notYet                         // a copy whose entry is not handed to it yet: again soon
)

// recordPause keeps paused session s's entry, with its task's place in the queue, off
// the mailbox.
func (r *Router) recordPause(s *session, paused *wire.PausedSession) {
	if r.cfg.Paused == nil || s.task == nil {
		return
	}
	entry := *paused
	if meta, err := s.task.Metadata(); err == nil {
		entry.Seq = meta.Sequence.Stream
	}
	entry.Subject = s.task.Subject()
	store, log := r.cfg.Paused, r.cfg.Log
	r.cfg.Routines.Go(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, auditReadTimeout)
		defer cancel()
		if err := store.Put(ctx, &entry); err != nil {
			log.Warn("a paused session was not recorded: it goes on at its time, but `agentmux sessions` and `resume` do not know it", "session", entry.Session, "err", err)
		}
	})
}

// pauseOver decides, off the mailbox, whether a delivery of session id's task runs.
// A paused session's waiting task (its entry's Seq) runs unless a resume by hand took
// the entry, and removes it. A copy queued by `agentmux resume` (unpaused) runs once the
// entry is handed to it, and leaves it, marked running, until its session ends: a copy
// delivered again, its node gone, runs again; one whose entry is gone is not needed.
func (r *Router) pauseOver(ctx context.Context, id string, msg jetstream.Msg, unpaused bool) pauseVerdict {
	if r.cfg.Paused == nil {
		return runs
	}
	entry, rev, err := r.cfg.Paused.Get(ctx, id)
	var seq uint64
	if meta, merr := msg.Metadata(); merr == nil {
		seq = meta.Sequence.Stream
	}
	switch {
	case err != nil:
		r.cfg.Log.Warn("whether a session is paused could not be read; its task runs", "session", id, "err", err)
		return runs
	case entry == nil && unpaused:
		return superseded // the session went on without it (its pause ended), or has ended
	case entry == nil:
		return runs
	case entry.Seq == seq: // the waiting task
		if entry.Copy != "" {
			return superseded
		}
		if err := r.cfg.Paused.Take(ctx, id, rev); errors.Is(err, store.ErrPauseTaken) {
			return superseded // a resume by hand took it meanwhile
		} else if err != nil {
			r.cfg.Log.Warn("a paused session's entry was not removed as it goes on; `agentmux sessions` may list it as paused", "session", id, "err", err)
		}
		return runs
	case !unpaused:
		return runs
	case entry.Copy == msg.Headers().Get(jetstream.MsgIDHeader):
		if entry.Running == "" {
			entry.Running = r.cfg.Node
			if err := r.cfg.Paused.Update(ctx, entry, rev); err != nil && !errors.Is(err, store.ErrPauseTaken) {
				r.cfg.Log.Warn("a resumed session's entry was not marked running", "session", id, "err", err)
			}
		}
		return runs
	case entry.Copy == "":
		return notYet // the resume hands it the entry in a moment
	}
	return superseded
}

// unpausedEnded removes the entry of a session resumed by hand once it has ended, off
// the mailbox.
func (r *Router) unpausedEnded(s *session) {
	if !s.unpaused || r.cfg.Paused == nil {
		return
	}
	id, paused, log := s.start.Session, r.cfg.Paused, r.cfg.Log
	r.cfg.Routines.Go(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, auditReadTimeout)
		defer cancel()
		entry, rev, err := paused.Get(ctx, id)
		if err == nil && entry != nil && entry.Copy != "" {
			err = paused.Take(ctx, id, rev)
		}
		if err != nil && !errors.Is(err, store.ErrPauseTaken) {
			log.Warn("a resumed session ended, and its entry is still listed as paused", "session", id, "err", err)
		}
	})
}

// pausedTask settles a delivery of a paused session's task that does not run.
func (r *Router) pausedTask(s *session, v pauseVerdict) {
	if v == notYet {
		var n uint64
		if meta, err := s.task.Metadata(); err == nil {
			n = meta.NumDelivered
		}
		r.nakFor(s.task, recheckAfter(n))
		return
	}
	r.cfg.Log.Info("a paused session's waiting task is superseded by its resume; dropped", "session", s.start.Session)
	if err := s.task.Term(); err != nil {
		r.cfg.Log.Warn("terminate task", "err", err)
	}
}
