package agent

import (
	"time"
)

// timerKind names what a timer bounds.
type timerKind int

const (
	timerInit      timerKind = iota // init_ack must arrive
	timerSession                    // the host's timeout
	timerIdle                       // the host's idle_timeout
	timerRequest                    // one request's deadline
	timerInterrupt                  // an interrupted session must end by itself
	timerDrain                      // stdout must close after the process exited
	timerTerm                       // stop ladder: SIGTERM to the group
	timerKill                       // stop ladder: SIGKILL to the group
)

// after sends a timerFired to the actor after d. Timers are never reset in place: each
// carries the generation it was armed for, and the actor ignores stale ones.
func (a *Agent) after(d time.Duration, kind timerKind, gen uint64, id string) *time.Timer {
	msg := &timerFired{kind: kind, gen: gen, id: id}
	return time.AfterFunc(d, func() { a.send(msg) })
}
