package node

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// pausedSweep is how often a node drops the entries of paused sessions whose waiting
// task is gone from the queue (cancelled, or expired by its TTL).
const pausedSweep = time.Minute

// pauses is the fleet's paused sessions as this node keeps them: the store the router
// records them in, and the watch that keeps agentmux_sessions_paused.
type pauses struct {
	store  *store.Paused
	stop   context.CancelFunc
	latest atomic.Pointer[map[string]*wire.PausedSession] // as the watch last saw them
}

// openPaused opens the fleet's paused sessions, keeps agentmux_sessions_paused from
// them, sweeps the entries no task waits for, and answers agentmux.ctl.<node>.resume.
func (n *Node) openPaused() error {
	ctx, cancel := context.WithTimeout(context.Background(), ctlTimeout)
	defer cancel()
	st, err := openDeclared(ctx, func() (*store.Paused, error) { return store.OpenPaused(ctx, n.Bus.JS) })
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	watch, stop := context.WithCancel(context.Background())
	n.pauses.store, n.pauses.stop = st, stop
	gauge := n.Metrics.PausedNow
	err = st.Watch(watch, func(paused map[string]*wire.PausedSession) {
		n.pauses.latest.Store(&paused)
		gauge.Reset()
		for _, p := range paused {
			if p.Running == "" {
				gauge.WithLabelValues(p.Host, p.Reason).Inc()
			}
		}
	})
	if err != nil {
		stop()
		return fmt.Errorf("node: %w", err)
	}
	n.engine.routines.Go(func(ctx context.Context) {
		t := time.NewTicker(pausedSweep)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				n.sweepPaused(ctx)
			}
		}
	})
	if err := n.serveCtl("resume", ctlTimeout, func(ctx context.Context, data []byte) any { return n.resumeSession(ctx, data) }); err != nil {
		return err
	}
	return n.serveCtl("paused", ctlTimeout, func(context.Context, []byte) any { return n.pausedList() })
}

// pausedList is the fleet's paused sessions, longest paused first.
func (n *Node) pausedList() []*wire.PausedSession {
	out := []*wire.PausedSession{}
	if m := n.pauses.latest.Load(); m != nil {
		out = slices.AppendSeq(out, maps.Values(*m))
	}
	slices.SortFunc(out, func(a, b *wire.PausedSession) int {
		return cmp.Or(cmp.Compare(a.Since, b.Since), strings.Compare(a.Session, b.Session))
	})
	return out
}

func (n *Node) closePaused() {
	if n.pauses.stop != nil {
		n.pauses.stop()
	}
}

// resumeSession has a paused session go on now, or a failed one again: from its latest
// checkpoint, or afresh.
func (n *Node) resumeSession(ctx context.Context, data []byte) *wire.Delivery {
	var req wire.ResumeRequest
	if err := json.Unmarshal(data, &req); err != nil || req.Session == "" {
		return &wire.Delivery{Error: `want {"session": "<id>", "fresh": true|false, "node": "<this node, or none>", "by": "<who>"}`}
	}
	if req.Node != "" && req.Node != n.Name {
		return &wire.Delivery{Error: fmt.Sprintf("this is node %s: ask node %s to resume a session on it (agentmux.ctl.%s.resume)", n.Name, req.Node, req.Node)}
	}
	entry, rev, err := n.pauses.store.Get(ctx, req.Session)
	switch {
	case err != nil:
		return &wire.Delivery{Error: err.Error()}
	case entry != nil:
		return n.unpause(ctx, entry, rev, req)
	}
	return n.resumeFailed(ctx, req)
}

// unpause queues a copy of paused session entry's waiting task to go on now, hands the
// entry to it, and takes the waiting one out of the queue (which, if it comes first,
// is superseded: the router's pauseOver).
func (n *Node) unpause(ctx context.Context, entry *wire.PausedSession, rev uint64, req wire.ResumeRequest) *wire.Delivery {
	if entry.Copy != "" {
		return &wire.Delivery{Error: fmt.Sprintf("session %s was resumed already; it goes on as soon as a node of host %s takes it (`agentmux sessions`)", entry.Session, entry.Host)}
	}
	tasks, err := n.Bus.JS.Stream(ctx, wire.TaskStream)
	if err != nil {
		return &wire.Delivery{Error: "the work queue: " + err.Error()}
	}
	waiting, err := tasks.GetMsg(ctx, entry.Seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		_ = n.pauses.store.Take(ctx, entry.Session, rev)
		return &wire.Delivery{Error: fmt.Sprintf("session %s's task no longer waits in the queue (it was cancelled, or expired): nothing to resume; submit it again", entry.Session)}
	} else if err != nil {
		return &wire.Delivery{Error: "the paused session's task: " + err.Error()}
	}
	var task wire.Task
	if err := json.Unmarshal(waiting.Data, &task); err != nil {
		return &wire.Delivery{Error: "the paused session's task is not a task: " + err.Error()}
	}
	task.Attempt, task.Fresh, task.Unpaused = entry.Attempt+1, req.Fresh, true
	if d := n.aim(&task, entry.Host, req); d != nil {
		return d
	}
	copyID := fmt.Sprintf("%s.resume.%d", entry.Session, rev)
	ack, err := n.queueAgain(ctx, entry.Subject, waiting.Header, copyID, &task)
	if err != nil {
		return &wire.Delivery{Error: err.Error()}
	}
	handed := *entry
	handed.Copy = copyID
	if err := n.pauses.store.Update(ctx, &handed, rev); err != nil {
		_ = tasks.DeleteMsg(ctx, ack.Sequence) // the copy is not needed
		if errors.Is(err, store.ErrPauseTaken) {
			return &wire.Delivery{Error: fmt.Sprintf("session %s went on meanwhile: its pause ended, or another resume took it", entry.Session)}
		}
		return &wire.Delivery{Error: err.Error()}
	}
	if err := tasks.DeleteMsg(ctx, entry.Seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		n.log.Info("a resumed session's waiting task stays in the queue; it is dropped when delivered", "session", entry.Session, "err", err)
	}
	from := fmt.Sprintf("from checkpoint %d", entry.Checkpoint)
	if req.Fresh {
		from = "afresh"
	}
	n.log.Info("paused session resumed by hand", "session", entry.Session, "by", req.By, "fresh", req.Fresh)
	return &wire.Delivery{OK: true, Effect: fmt.Sprintf("queued again on host %s%s to go on now, %s (it was paused until %s: %s)", entry.Host, aimedAt(req), from,
		time.UnixMilli(entry.Until).UTC().Format(time.RFC3339), entry.Why)}
}

// resumeFailed queues a failed session's task again, from the audit: its prompt, host
// and who asked for it, as attempt one after its last.
func (n *Node) resumeFailed(ctx context.Context, req wire.ResumeRequest) *wire.Delivery {
	records, err := store.ReadAudit(ctx, n.Bus.JS, req.Session)
	if err != nil {
		return &wire.Delivery{Error: err.Error()}
	}
	var started, ended *wire.AuditRecord
	last := -1
	for _, r := range records {
		switch r.Kind {
		case "session.started":
			last = max(last, r.Attempt)
			if started == nil || r.Attempt < started.Attempt {
				started = r
			}
		case "session.ended":
			if ended == nil || r.Attempt >= ended.Attempt {
				ended = r
			}
		}
	}
	switch {
	case started == nil:
		return &wire.Delivery{Error: fmt.Sprintf("no session %s is paused or in the audit", req.Session)}
	case started.Pipeline != "":
		return &wire.Delivery{Error: fmt.Sprintf("session %s is stage %s of a run of pipeline %s: a run goes on by itself, stage by stage", req.Session, started.Stage, started.Pipeline)}
	case ended == nil || ended.Attempt < last:
		return &wire.Delivery{Error: fmt.Sprintf("session %s has not ended: its attempt %d runs or is queued (`agentmux sessions`)", req.Session, last)}
	case ended.Outcome == "ok":
		return &wire.Delivery{Error: fmt.Sprintf("session %s ended ok: nothing to resume", req.Session)}
	case ended.Outcome == wire.OutcomePaused || ended.Outcome == wire.OutcomeHandedOver:
		return &wire.Delivery{Error: fmt.Sprintf("session %s ended %s, and its task is back in the queue: it goes on by itself", req.Session, ended.Outcome)}
	case started.Truncated > 0:
		return &wire.Delivery{Error: fmt.Sprintf("session %s's prompt was cut to fit the audit: submit its task again", req.Session)}
	}
	task := &wire.Task{ID: req.Session, Host: started.Host, Prompt: started.Text, By: started.By, Attempt: last + 1, Fresh: req.Fresh}
	if d := n.aim(task, started.Host, req); d != nil {
		return d
	}
	if _, err := n.queueAgain(ctx, wire.TaskSubjectBy(started.Host, started.By), nil, fmt.Sprintf("%s.resume.a%d", req.Session, last+1), task); err != nil {
		return &wire.Delivery{Error: err.Error()}
	}
	n.log.Info("failed session resumed by hand", "session", req.Session, "by", req.By, "fresh", req.Fresh)
	from := "from its latest checkpoint, if it has one"
	if req.Fresh {
		from = "afresh"
	}
	return &wire.Delivery{OK: true, Effect: fmt.Sprintf("queued again on host %s%s as attempt %d, %s (it had ended %s: %s)", started.Host, aimedAt(req), last+1, from, ended.Outcome, ended.Error)}
}

// aim makes task this node's to take (for wire.TaskAimedFor) when req asks for it here,
// and any node's when it does not, whatever node an earlier resume aimed it at; a
// refusal when this node does not run its host.
func (n *Node) aim(task *wire.Task, host string, req wire.ResumeRequest) *wire.Delivery {
	task.Node = req.Node // resumeSession refused another node's
	if req.Node == "" {
		return nil
	}
	if _, ok := n.served().hosts[host]; !ok {
		return &wire.Delivery{Error: fmt.Sprintf("node %s does not run host %s (it runs %s): resume it on a node that does, or on any (no --node)",
			n.Name, host, cmp.Or(strings.Join(n.Hosts(), ", "), "none"))}
	}
	return nil
}

// aimedAt says where a resume goes, for its effect: "" on any node.
func aimedAt(req wire.ResumeRequest) string {
	if req.Node == "" {
		return ""
	}
	return fmt.Sprintf(" for node %s (any node of the host takes it if that one has not within %v)", req.Node, wire.TaskAimedFor)
}

// queueAgain publishes task to subject, with the headers of the task it stands for
// (its trace context) and id as its Nats-Msg-Id.
func (n *Node) queueAgain(ctx context.Context, subject string, header nats.Header, id string, task *wire.Task) (*jetstream.PubAck, error) {
	data, _ := json.Marshal(task)
	msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	for _, h := range []string{"traceparent", "tracestate"} {
		if v := header.Get(h); v != "" {
			msg.Header.Set(h, v)
		}
	}
	msg.Header.Set(jetstream.MsgIDHeader, id)
	ack, err := n.Bus.JS.PublishMsg(ctx, msg)
	if err != nil {
		return nil, fmt.Errorf("queue session %s again: %w", task.ID, err)
	}
	return ack, nil
}

// sweepPaused drops the entries of paused sessions whose waiting task is no longer in
// the queue and was not handed to a copy: it was cancelled or expired, and nothing
// will go on. Every node sweeps; the first to remove an entry does.
func (n *Node) sweepPaused(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, ctlTimeout)
	defer cancel()
	list := n.pausedList()
	if len(list) == 0 {
		return
	}
	tasks, err := n.Bus.JS.Stream(ctx, wire.TaskStream)
	if err != nil {
		return
	}
	for _, p := range list {
		if p.Copy != "" {
			continue
		}
		if _, err := tasks.GetMsg(ctx, p.Seq); !errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if entry, rev, err := n.pauses.store.Get(ctx, p.Session); err == nil && entry != nil && entry.Copy == "" && entry.Seq == p.Seq {
			if err := n.pauses.store.Take(ctx, p.Session, rev); err == nil {
				n.log.Info("a paused session's task is gone from the queue (cancelled or expired); its entry goes", "session", p.Session)
			}
		}
	}
}
