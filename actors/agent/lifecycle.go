package agent

// phase is where an agent process is in its life. The actor is in exactly one; moving
// between them is [Agent.to], which refuses a move the table below does not allow and
// keeps the agents{state} gauge on the phase's label.
//
//	new ──► unspawned ──► starting ──► initializing ──► idle ◄──► busy
//	             │            │              │            │         │
//	             │            └──────────────┴─► stopping ◄┴─────────┤
//	             │                           │      │               │
//	             │                           └──────┴─► exited ◄────┘
//	             └───────────────────────────────────────────┴─► gone
//
// Any phase may go to gone: a process that never started, or an actor stopped from
// outside, is gone without exiting.
type phase uint8

const (
	phaseNew          phase = iota // the actor has not started
	phaseUnspawned                 // a one-shot dialect: the process starts with its session's args
	phaseStarting                  // the process is being started
	phaseInitializing              // init written; init_ack awaited
	phaseIdle                      // ready for a session
	phaseBusy                      // running a session
	phaseStopping                  // the stop ladder: stdin closed, then SIGTERM, then SIGKILL
	phaseExited                    // the process exited; its output is read to the end
	phaseGone                      // AgentExited sent: the parent stops the actor
)

var phaseNames = [...]string{"new", "unspawned", "starting", "initializing", "idle", "busy", "stopping", "exited", "gone"}

func (p phase) String() string { return phaseNames[p] }

// label is the phase's state on the agents gauge; "" is not counted.
func (p phase) label() string {
	switch p {
	case phaseUnspawned, phaseStarting, phaseInitializing:
		return "starting"
	case phaseIdle, phaseBusy, phaseStopping:
		return p.String()
	case phaseExited:
		return "stopping"
	}
	return ""
}

// moves lists where each phase may go besides gone.
var moves = [...][]phase{
	phaseNew:          {phaseUnspawned, phaseStarting},
	phaseUnspawned:    {phaseStarting},
	phaseStarting:     {phaseInitializing, phaseIdle, phaseStopping},
	phaseInitializing: {phaseIdle, phaseStopping, phaseExited},
	phaseIdle:         {phaseBusy, phaseStopping, phaseExited},
	phaseBusy:         {phaseIdle, phaseStopping, phaseExited},
	phaseStopping:     {phaseExited},
	phaseExited:       {},
	phaseGone:         {},
}

// canMove says whether a process in phase p may move to next.
func (p phase) canMove(next phase) bool {
	if next == phaseGone {
		return p != phaseGone
	}
	for _, q := range moves[p] {
		if q == next {
			return true
		}
	}
	return false
}

// live says whether the process runs: started and not yet exited, so its stdin takes
// writes.
func (p phase) live() bool { return p >= phaseInitializing && p <= phaseStopping }

// to moves the actor to phase next and the agents gauge with it. A move the table does
// not allow is a bug: it is logged and not made.
func (a *Agent) to(next phase) bool {
	if !a.phase.canMove(next) {
		a.log.Error("agent lifecycle: move refused; this is a bug", "from", a.phase, "to", next, "pid", a.pid())
		return false
	}
	was, now := a.phase.label(), next.label()
	a.phase = next
	if was != now {
		if was != "" {
			a.shared.agentsIn(was).Dec()
		}
		if now != "" {
			a.shared.agentsIn(now).Inc()
		}
	}
	return true
}
