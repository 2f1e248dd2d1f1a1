package router

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/config"
)

// pool is one host's processes and waiting sessions.
type pool struct {
	host    *config.Host
	shared  *agent.Shared         // what the host's agents share; made at the first spawn
	procs   map[string]*actor.PID // every live agent actor, by PID id
	idle    []*actor.PID
	busy    map[string]*session // by PID id
	queue   []*session
	slots   chan struct{} // held by the task puller per task in flight
	running map[string]bool
	// stale are the busy processes started from a host table a reload replaced: they
	// stop when their session ends instead of taking the next one.
	stale map[string]bool
	// ended holds the tasks that ended here, by id, with when: a delivery of one that
	// crossed its acknowledgement (a cut longer than the ack wait) is acknowledged
	// again, not run again. Kept for endedMemory.
	ended map[string]time.Time
}

func newPool(h *config.Host) *pool {
	return &pool{host: h, procs: map[string]*actor.PID{}, busy: map[string]*session{},
		slots: make(chan struct{}, h.Pool), running: map[string]bool{}, ended: map[string]time.Time{},
		stale: map[string]bool{}}
}

// enqueue queues s, which runs here from now on.
func (p *pool) enqueue(s *session) {
	p.hold(s.start.Session)
	p.queue = append(p.queue, s)
}

// hold says that session id runs here (or is about to: its earlier attempts are read).
func (p *pool) hold(id string) { p.running[id] = true }

// runsHere reports whether session id runs here: a delivery of its task is one that
// crossed this node's "in progress".
func (p *pool) runsHere(id string) bool { return p.running[id] }

// requeue puts s back in the queue: first, to run before the others (its process was
// gone before it began), or last (a retry).
func (p *pool) requeue(s *session, first bool) {
	if first {
		p.queue = append([]*session{s}, p.queue...)
		return
	}
	p.queue = append(p.queue, s)
}

// next takes the first queued session and the process to run it on: an idle one, the
// one used last first, or a new one from spawn while the pool has room. It returns a
// nil session when nothing is queued or no process is free.
func (p *pool) next(spawn func() *actor.PID) (*actor.PID, *session) {
	if len(p.queue) == 0 {
		return nil, nil
	}
	var pid *actor.PID
	switch {
	case len(p.idle) > 0:
		pid = p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
	case len(p.procs) < p.host.Pool:
		pid = spawn()
		p.procs[pid.Id] = pid
	default:
		return nil, nil
	}
	s := p.queue[0]
	p.queue[0] = nil
	p.queue = p.queue[1:]
	p.busy[pid.Id] = s
	return pid, s
}

// sessionEnded frees pid's session and returns it; a reusable process is idle again,
// unless it is stale, which the caller then stops.
func (p *pool) sessionEnded(pid *actor.PID, reusable bool) (s *session, stale bool) {
	s, stale = p.busy[pid.Id], p.stale[pid.Id]
	delete(p.busy, pid.Id)
	delete(p.stale, pid.Id)
	if reusable && !stale {
		p.idle = append(p.idle, pid)
	}
	return s, stale
}

// gone forgets the process pid, if it is one of this pool's, and returns the session it
// still held, if any.
func (p *pool) gone(pid *actor.PID) (s *session, ours bool) {
	if _, ok := p.procs[pid.Id]; !ok {
		return nil, false
	}
	delete(p.procs, pid.Id)
	for i, idle := range p.idle {
		if idle.Id == pid.Id {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			break
		}
	}
	s = p.busy[pid.Id]
	delete(p.busy, pid.Id)
	delete(p.stale, pid.Id)
	return s, true
}

// leave says that session id no longer runs here.
func (p *pool) leave(id string) { delete(p.running, id) }

// endedAt notes that session id's task ended here at at, acknowledged: a delivery of it
// that crossed the acknowledgement is acknowledged again, not run again.
func (p *pool) endedAt(id string, at time.Time) { p.ended[id] = at }

// endedHere reports whether session id ended here lately (forgetEnded).
func (p *pool) endedHere(id string) bool {
	_, ok := p.ended[id]
	return ok
}

// forgetEnded forgets the sessions that ended before cutoff.
func (p *pool) forgetEnded(cutoff time.Time) {
	for id, at := range p.ended {
		if at.Before(cutoff) {
			delete(p.ended, id)
		}
	}
}
