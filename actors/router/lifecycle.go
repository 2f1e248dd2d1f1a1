package router

import "slices"

// phase is where the router is in its life. It is in exactly one; moving between them
// is [Router.to], which refuses a move the table below does not allow.
//
//	taking ◄─► draining ──► stopping ──► stopped
//	   │                       ▲
//	   └───────────────────────┘
type phase uint8

const (
	phaseTaking   phase = iota // takes tasks, pipeline runs and sessions
	phaseDraining              // takes none; running sessions may finish within the grace
	phaseStopping              // every process is told to stop; queued tasks go back
	phaseStopped               // no process left: Config.Stopped is closed
)

var phaseNames = [...]string{"taking", "draining", "stopping", "stopped"}

func (p phase) String() string { return phaseNames[p] }

// moves lists where each phase may go.
var moves = [...][]phase{
	phaseTaking:   {phaseDraining, phaseStopping},
	phaseDraining: {phaseTaking, phaseStopping}, // undrain, or the grace's end
	phaseStopping: {phaseStopped},
	phaseStopped:  {},
}

// canMove says whether a router in phase p may move to next.
func (p phase) canMove(next phase) bool { return slices.Contains(moves[p], next) }

// to moves the router to phase next. A move the table does not allow is a bug: it is
// logged and not made.
func (r *Router) to(next phase) bool {
	if !r.phase.canMove(next) {
		r.cfg.Log.Error("router lifecycle: move refused; this is a bug", "from", r.phase, "to", next)
		return false
	}
	r.phase = next
	return true
}

// taking reports whether the router takes new work.
func (r *Router) taking() bool { return r.phase == phaseTaking }

// stopping reports whether a shutdown has begun.
func (r *Router) stopping() bool { return r.phase >= phaseStopping }
