package router

import (
	"fmt"
	"time"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/wire"
)

// Drain stops the node taking tasks: tasks still queued here go back to the work queue
// at once, running sessions may finish within Grace, and then the rest are stopped and
// their tasks handed back (Stopped is closed when no process is left). With Handover,
// a running session that can be checkpointed goes at its next safe point, to go on from
// there on another node, without waiting out the grace. No task is lost, and none runs
// to completion twice. The answer is a *wire.DrainReply.
type Drain struct {
	Grace    time.Duration
	Handover bool
}

// Undrain makes a draining node take tasks again, while its running sessions have not
// all ended and its grace is not over (then it stops, as a drain says); the answer is a
// *wire.DrainReply.
type Undrain struct{}

type drainOver struct {
	grace time.Duration
	drain int // which drain it ends: one that was undone ends nothing
}

func (r *Router) undrain() *wire.DrainReply {
	switch {
	case r.stopping():
		return &wire.DrainReply{Effect: "the node is stopping: its drain is over (or it was told to stop); start it again"}
	case r.taking():
		return &wire.DrainReply{OK: true, Effect: "not draining: the node takes tasks"}
	}
	if !r.to(phaseTaking) {
		return &wire.DrainReply{Effect: "the node cannot take tasks again from " + r.phase.String()}
	}
	if r.cfg.Intake != nil {
		r.startIntake(r.c)
	}
	if r.cfg.Undrained != nil {
		r.cfg.Undrained()
	}
	r.cfg.Log.Info("undrained: taking tasks again")
	return &wire.DrainReply{OK: true, Effect: "taking tasks again"}
}

func (r *Router) drain(m *Drain) *wire.DrainReply {
	if r.stopping() {
		return &wire.DrainReply{Effect: "the node is already stopping"}
	}
	first := r.taking()
	if first {
		r.to(phaseDraining)
		r.drains++
		if r.cfg.Draining != nil {
			r.cfg.Draining()
		}
	}
	if r.stopPull != nil {
		r.stopPull()
	}
	r.intakeStopped()
	r.yieldRuns()
	handed, running, asked := 0, 0, 0
	for _, p := range r.pools {
		kept := p.queue[:0]
		for _, s := range p.queue {
			if s.task == nil {
				kept = append(kept, s) // a local submission has no queue to go back to
				continue
			}
			r.handBack(p, s)
			handed++
		}
		p.queue = kept
		running += len(p.busy) + len(p.queue)
		if m.Handover && p.host.Checkpoint && r.cfg.Checkpoints != nil {
			for id, s := range p.busy {
				if s.start.Requeue { // a task, which another node can take (a run's stage hands itself on)
					r.c.Send(p.procs[id], &agent.Handover{Reason: "its node drains"})
					asked++
				}
			}
		}
	}
	if first {
		if running == 0 {
			r.shutdown("drained: nothing was running")
		} else {
			system, self := r.c.ActorSystem(), r.c.Self()
			grace, drain := m.Grace, r.drains
			time.AfterFunc(grace, func() { system.Root.Send(self, &drainOver{grace: grace, drain: drain}) })
		}
	}
	r.cfg.Log.Info("draining: no more tasks taken", "running", running, "handed_back", handed, "grace", m.Grace, "handover", asked)
	effect := fmt.Sprintf("draining: %d sessions may finish within %v, %d queued tasks handed back", running, m.Grace, handed)
	if asked > 0 {
		effect += fmt.Sprintf("; %d go to another node at their next checkpoint, if they take one", asked)
	}
	return &wire.DrainReply{OK: true, Running: running, HandedBack: handed, Effect: effect}
}

// handBack returns a task that never started here to the work queue.
func (r *Router) handBack(p *pool, s *session) {
	p.leave(s.start.Session)
	r.cfg.Metrics.SessionsActive.WithLabelValues(p.host.Name).Dec()
	r.nak(s.task)
	r.release(p)
}

// intakeStopped says, in the task_intake gauges, that this node takes no more tasks.
func (r *Router) intakeStopped() {
	if r.cfg.JS == nil {
		return
	}
	for name := range r.pools {
		r.cfg.Metrics.TaskIntake.WithLabelValues(name).Set(0)
	}
}

// maybeDrained stops a draining router once its last session has ended.
func (r *Router) maybeDrained() {
	if r.phase != phaseDraining {
		return
	}
	for _, p := range r.pools {
		if len(p.busy) > 0 || len(p.queue) > 0 {
			return
		}
	}
	if len(r.runs) > 0 {
		return // each hands itself on at its stage's end
	}
	r.shutdown("drained: every session finished")
}
