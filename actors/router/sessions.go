package router

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/internal/actorio"
	"github.com/agentmux/agentmux/internal/retry"
	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/wire"
)

// validID reports whether id can be a session id: it is a NATS subject token.
func validID(id string) bool { return wire.CheckTaskID(id) == nil }

func (r *Router) onSessionEnded(m *agent.SessionEnded) {
	p := r.pools[m.Result.Host]
	if p == nil {
		return
	}
	s, stale := p.sessionEnded(m.PID, m.Reusable && !r.stopping())
	if stale && m.Reusable && !r.stopping() {
		r.c.Send(m.PID, &agent.Shutdown{Reason: "the manifest changed: host " + p.host.Name + "'s next sessions start a new process"})
	}
	if s == nil {
		return
	}
	res := cancelled(s, m.Result)
	s.usage.Merge(res.Usage) // every attempt's model calls were paid for
	switch {
	case res.OK || r.stopping() || s.cancelled != "" || res.BudgetExceeded || res.HandedOver || res.Paused != nil:
	case res.Retryable:
		r.cfg.Log.Info("session's process was gone before it started; running it on a fresh process", "session", res.Session)
		p.requeue(s, true)
		r.dispatch(p)
		return
	case res.Payload == nil && s.start.Attempt < p.host.Retries:
		// Failed without the agent saying so (crash, timeout): run it again.
		r.cfg.Log.Warn("session failed; retrying", "session", res.Session, "attempt", s.start.Attempt+1, "err", res.Error)
		next := *s.start
		next.Attempt++
		next.Previous = previousAttempt(s.start, res)
		next.Retried = s.usage.Spend(r.cfg.Manifest.Pricing.Cost) // counts against its budget
		next.Restored = nil
		s.start = &next
		s.started = false // the new attempt starts anew: event and audit
		r.retry(p, s, res)
		return
	}
	r.finish(p, s, res)
	r.dispatch(p)
}

// retry runs s again: from its latest checkpoint, read off the mailbox, when its host
// keeps them; the session is held here meanwhile.
func (r *Router) retry(p *pool, s *session, res *agent.Result) {
	if r.cfg.Checkpoints == nil || !p.host.Checkpoint {
		p.requeue(s, false)
		r.dispatch(p)
		return
	}
	host, id := p.host, s.start.Session
	if !actorio.Do(r.cfg.Routines, actorio.Self(r.c), auditReadTimeout, func(ctx context.Context) any {
		return &retryRestored{p: p, s: s, res: res, restored: r.restorable(ctx, host, id)}
	}) {
		r.finish(p, s, res) // the node stops: its task goes back to the queue
	}
}

func (r *Router) onRetryRestored(m *retryRestored) {
	if r.stopping() {
		r.finish(m.p, m.s, m.res) // its task goes back to the queue
		return
	}
	if m.restored != nil {
		m.restored.Why = "retried"
	}
	m.s.start.Restored = m.restored
	m.p.requeue(m.s, false)
	r.dispatch(m.p)
}

// finish delivers a session's final result.
func (r *Router) finish(p *pool, s *session, res *agent.Result) {
	r.cfg.Metrics.SessionsActive.WithLabelValues(p.host.Name).Dec()
	outcome := "ok"
	switch {
	case res.HandedOver:
		outcome = wire.OutcomeHandedOver
	case res.Paused != nil:
		outcome = wire.OutcomePaused
	case res.BudgetExceeded:
		outcome = wire.OutcomeBudgetExceeded
	case !res.OK:
		outcome = "error"
	}
	r.cfg.Metrics.Sessions.WithLabelValues(p.host.Name, outcome).Inc()
	r.cfg.Metrics.SessionDuration.WithLabelValues(p.host.Name).Observe(res.Duration.Seconds())
	ms := float64(res.Duration.Microseconds()) / 1000
	spend := s.usage.Spend(r.cfg.Manifest.Pricing.Cost)
	r.countSpend(p.host.Name, outcome, spend)
	// Under a daily budget, a task's slot is freed once its spend is in the day's
	// total: the next task the slot takes is held by the budget this session reached.
	counted := r.addSpend(p.host.Name, res.Session, spend)
	if r.cfg.Daily == nil || r.cfg.Daily.Limit() == 0 {
		counted = nil
	}
	ended := &wire.SessionEnded{Session: res.Session, Host: p.host.Name, Task: s.start.Task, Node: r.cfg.Node, Attempt: s.start.Attempt,
		Pipeline: s.start.Pipeline, Stage: s.start.Stage, Outcome: outcome, Error: res.Error, Duration: ms, Data: res.Data, Workspace: res.Workspace,
		Spend: spend}
	if res.OK {
		ended.Result = res.Payload
	}
	res.Spend = spend
	r.publish(p.host.Name, res.Session, wire.EventSessionEnded, ended)
	rec := r.record(s, "session.ended")
	rec.Outcome, rec.Error, rec.Duration, rec.Value, rec.Workspace, rec.Spend = outcome, res.Error, ms, ended.Result, res.Workspace, spend
	r.cfg.Audit(wire.AuditID(res.Session, s.start.Attempt, "ended"), rec)
	p.leave(s.start.Session)
	goesOn := !res.OK && (r.stopping() || res.HandedOver || res.Paused != nil) // its task runs again, elsewhere or later
	if r.cfg.SessionEnded != nil && !goesOn {
		session := res.Session
		r.cfg.Routines.Go(func(ctx context.Context) { r.cfg.SessionEnded(ctx, session) })
	}
	if s.task != nil {
		if !goesOn {
			r.cfg.Metrics.Tasks.WithLabelValues(p.host.Name, outcome).Inc()
			r.ack(s.task, res.Session)
			p.endedAt(res.Session, time.Now())
			r.unpausedEnded(s)
		} else if res.Paused == nil {
			r.nakFor(s.task, 0) // another node runs it now
		} else {
			r.nakFor(s.task, time.Until(time.UnixMilli(res.Paused.Until))) // once the pause is over
			r.recordPause(s, res.Paused)
		}
		if counted == nil {
			r.release(p)
		} else {
			slots := p.slots
			r.cfg.Routines.Go(func(context.Context) {
				<-counted
				freeSlot(slots)
			})
		}
	}
	r.deliver(s.start, res)
	r.maybeStopped()
	r.maybeDrained()
}

// ack acknowledges a finished task and waits for the server to confirm it, trying
// again across a leader election or a reconnect: a lost ack would run the task twice.
func (r *Router) ack(task jetstream.Msg, session string) {
	r.cfg.Routines.Go(func(context.Context) {
		deadline := time.Now().Add(taskAckTimeout)
		pace := retry.Backoff{Min: taskAckRetryWait, Max: retryWaitMax}
		for try := 1; ; try++ {
			ctx, cancel := context.WithTimeout(context.Background(), taskAckTry)
			err := task.DoubleAck(ctx)
			cancel()
			switch {
			case err == nil:
				return
			case time.Now().After(deadline):
				r.cfg.Log.Error("task not acknowledged; it will run again elsewhere", "session", session, "tries", try, "err", err)
				return
			}
			// Not the group's context: an ack still due when the node stops is waited for.
			retry.Sleep(context.Background(), pace.Next(0))
		}
	})
}

func (r *Router) deliver(start *agent.StartSession, res *agent.Result) {
	if start.Notify != nil {
		r.c.Send(start.Notify, res)
	}
	hand(r.cfg.Log, start.Reply, res)
}

// hand gives v to reply, a channel its sender buffered for it, without waiting: a
// full one would stall the router, so v is dropped instead, and the drop logged. A nil
// reply wants nothing.
func hand[T any](log *slog.Logger, reply chan<- T, v T) {
	if reply == nil {
		return
	}
	select {
	case reply <- v:
	default:
		log.Error("a reply channel is full; what it was sent is dropped: its sender must buffer one reply per request", "reply", fmt.Sprintf("%T", v))
	}
}

func (r *Router) lifecycleStarted(s *session) {
	r.publish(s.host, s.start.Session, wire.EventSessionStarted, &wire.SessionStarted{
		Session: s.start.Session, Host: s.host, Task: s.start.Task, Node: r.cfg.Node, Attempt: s.start.Attempt,
		Pipeline: s.start.Pipeline, Stage: s.start.Stage})
	rec := r.record(s, "session.started")
	rec.Text, rec.By, rec.Claimed = s.start.Prompt, s.start.By, s.start.ClaimedBy
	r.cfg.Audit(wire.AuditID(s.start.Session, s.start.Attempt, "started"), rec)
}

// record starts an audit record of session s.
func (r *Router) record(s *session, kind string) *wire.AuditRecord {
	return &wire.AuditRecord{Kind: kind, Time: time.Now().UnixMilli(), Node: r.cfg.Node, Host: s.host, Session: s.start.Session,
		Attempt: s.start.Attempt, Pipeline: s.start.Pipeline, Stage: s.start.Stage}
}

// previousAttempt is what a retry is told of the attempts before it: the last one's
// error, and every request they had answered (a replayed answer is the original's).
func previousAttempt(start *agent.StartSession, res *agent.Result) *protocol.PreviousAttempt {
	prev := &protocol.PreviousAttempt{Attempt: start.Attempt, Error: res.Error}
	if start.Previous != nil {
		prev.Requests = append(prev.Requests, start.Previous.Requests...)
	}
	for _, q := range res.Requests {
		if !wire.Replayable(string(q.Outcome), q.Decider) {
			continue
		}
		prev.Requests = append(prev.Requests, protocol.PriorAnswer{Attempt: start.Attempt, Type: string(q.Type), Text: q.Text, Value: q.Value, Decider: q.Decider})
	}
	return prev
}

func (r *Router) publish(host, session, typ string, v interface{ AppendJSON([]byte) []byte }) {
	if err := bus.PublishEvent(r.cfg.Conn, host, session, typ, v.AppendJSON(nil)); err != nil {
		r.cfg.Metrics.PublishErrors.WithLabelValues("event").Inc()
	}
}

// onAgentGone forgets an agent process. A session it still held ends with an error when
// the actor failed; when its process exited (AgentExited), the session was handed to it
// after it went (an agent reports each session's end before its exit), never ran there,
// and runs on a fresh process.
func (r *Router) onAgentGone(pid *actor.PID, exited bool) {
	for _, p := range r.pools {
		s, ours := p.gone(pid)
		if !ours {
			continue
		}
		switch {
		case s != nil && exited && !r.stopping():
			r.cfg.Log.Info("session handed to a process that had just exited; running it on a fresh process", "session", s.start.Session)
			p.requeue(s, true)
		case s != nil:
			r.finish(p, s, cancelled(s, &agent.Result{Session: s.start.Session, Host: p.host.Name, Task: s.start.Task,
				Error: "agent actor stopped unexpectedly", Duration: time.Since(s.start.Started)}))
		}
		r.dispatch(p)
	}
	r.maybeStopped()
}

func (r *Router) shutdown(reason string) {
	if r.stopping() {
		return
	}
	r.to(phaseStopping)
	if r.cancel != nil {
		r.cancel()
	}
	r.intakeStopped()
	r.stopRuns()
	for _, p := range r.pools {
		queued := p.queue
		p.queue = nil
		for _, s := range queued {
			if s.task != nil && !s.started {
				r.handBack(p, s) // it never started here: another node runs it
				continue
			}
			r.finish(p, s, &agent.Result{Session: s.start.Session, Host: p.host.Name, Task: s.start.Task,
				Error: ErrShuttingDown.Error(), Duration: time.Since(s.start.Started)})
		}
		for _, pid := range p.procs {
			r.c.Send(pid, &agent.Shutdown{Reason: reason})
		}
		p.idle = nil
	}
	r.maybeStopped()
}

// maybeStopped closes Stopped once a shutdown has no process left.
func (r *Router) maybeStopped() {
	if r.phase != phaseStopping {
		return
	}
	for _, p := range r.pools {
		if len(p.procs) > 0 {
			return
		}
	}
	r.to(phaseStopped)
	if r.cfg.Stopped != nil {
		close(r.cfg.Stopped)
	}
}

// countSpend counts what an ended session's model calls cost, by host, model and the
// session's outcome.
func (r *Router) countSpend(host, outcome string, spend *wire.Spend) {
	if spend == nil {
		return
	}
	for _, m := range spend.Models {
		for _, k := range []struct {
			kind string
			n    int64
		}{{"input", m.InputTokens}, {"output", m.OutputTokens}, {"cache_read", m.CacheReadTokens}, {"cache_write", m.CacheWriteTokens}} {
			if k.n > 0 {
				r.cfg.Metrics.SessionTokens.WithLabelValues(host, m.Model, k.kind, outcome).Add(float64(k.n))
			}
		}
		if m.CostUSD > 0 {
			r.cfg.Metrics.SessionCost.WithLabelValues(host, m.Model, outcome).Add(m.CostUSD)
		}
	}
}

// addSpend adds an ended session's spend to its host's daily total, fleet-wide, off
// the router's goroutine; the channel it returns is closed once it is counted (or
// could not be); nil when there is nothing to count.
func (r *Router) addSpend(host, session string, spend *wire.Spend) <-chan struct{} {
	if spend == nil || r.cfg.Spend == nil {
		return nil
	}
	done := make(chan struct{})
	end := time.Now()
	r.cfg.Routines.Go(func(ctx context.Context) {
		defer close(done)
		ctx, cancel := context.WithTimeout(ctx, spendTimeout)
		defer cancel()
		if err := r.cfg.Spend.Add(ctx, host, end, spend); err != nil {
			r.cfg.Log.Warn("the session's spend is not in its host's daily total", "session", session, "host", host, "err", err)
		}
	})
	return done
}
