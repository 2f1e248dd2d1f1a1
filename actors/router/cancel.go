package router

import (
	"slices"
	"time"

	"github.com/agentmux/agentmux/actors/agent"
)

// cancelSession ends session id for good, as failed with the error "cancelled: why": one
// queued here leaves the queue at once; a running one's agent is stopped (its pending
// requests answered cancelled, the stop ladder run) and the session ends when it is.
// Either way it is not retried, and its task is acknowledged: it runs nowhere again.
func (r *Router) cancelSession(id, why string) *ctlReply {
	if why == "" {
		why = "by an operator"
	}
	for _, p := range r.pools {
		if i := slices.IndexFunc(p.queue, func(s *session) bool { return s.start.Session == id }); i >= 0 {
			s := p.queue[i]
			p.queue = slices.Delete(p.queue, i, i+1)
			if !s.started {
				s.started = true
				r.lifecycleStarted(s) // its trail says it was asked for, then cancelled
			}
			r.finish(p, s, &agent.Result{Session: id, Host: p.host.Name, Task: s.start.Task,
				Error: "cancelled " + why, Duration: time.Since(s.start.Started)})
			r.dispatch(p)
			return &ctlReply{OK: true, Effect: "cancelled before it started"}
		}
		for pid, s := range p.busy {
			if s.start.Session != id {
				continue
			}
			if s.cancelled != "" {
				return &ctlReply{OK: true, Effect: "already being cancelled: its agent is stopping"}
			}
			s.cancelled = "cancelled " + why
			r.c.Send(p.procs[pid], &agent.Shutdown{Reason: s.cancelled})
			return &ctlReply{OK: true, Effect: "cancelled: its agent is stopping"}
		}
	}
	return &ctlReply{Error: "no running or queued session " + id + " on this node"}
}

// cancelled gives a cancelled session's result the cancel as its error: however its
// agent ended, it failed because it was cancelled, and is not retried.
func cancelled(s *session, res *agent.Result) *agent.Result {
	if s == nil || s.cancelled == "" {
		return res
	}
	c := *res
	c.OK, c.Error, c.Retryable = false, s.cancelled, false
	return &c
}
