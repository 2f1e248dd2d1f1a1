package agent

import (
	"fmt"
	"time"

	"github.com/agentmux/agentmux/protocol"
)

// timerKind names what a timer bounds.
type timerKind int

const (
	timerInit       timerKind = iota // init_ack must arrive
	timerSession                     // the host's timeout
	timerIdle                        // the host's idle_timeout
	timerInterrupt                   // an interrupted session must end by itself
	timerBudget                      // the session's wall budget
	timerDrain                       // stdout must close after the process exited
	timerTerm                        // stop ladder: SIGTERM to the group
	timerKill                        // stop ladder: SIGKILL to the group
	timerCheckpoint                  // the host's checkpoint_interval
)

// after sends a timerFired to the actor after d. Timers are never reset in place: each
// carries the generation it was armed for, and the actor ignores stale ones.
func (a *Agent) after(d time.Duration, kind timerKind, gen uint64) *time.Timer {
	msg := &timerFired{kind: kind, gen: gen}
	return time.AfterFunc(d, func() { a.send(msg) })
}

// Request deadlines share one timer per agent, armed for the soonest: a request costs a
// heap entry, not a timer of its own. An answered request's entry is dropped once it is
// the soonest, or skipped when it falls due; the timer is stopped once no entry is left,
// and otherwise not moved (a fire with nothing due arms it for the next).

// dropAnswered drops the soonest deadlines whose request is no longer pending, so that
// a long session's heap holds about its outstanding requests, not all it ever asked;
// with none left, the timer is stopped, so a session whose requests are all answered
// in time costs no wake.
func (a *Agent) dropAnswered(s *session) {
	for e, ok := s.due.Soonest(); ok; e, ok = s.due.Soonest() {
		if p := s.open[e.Key]; p != nil && p.deadline.Equal(e.At) {
			return
		}
		s.due.Drop()
	}
	if !a.wake.IsZero() {
		a.requests.Stop()
		a.wake = time.Time{}
	}
}

// requestsDue tells the actor that the soonest request deadline may have come.
type requestsDue struct{}

// dueAt makes request id of session s due at at.
func (a *Agent) dueAt(s *session, at time.Time, id string) {
	s.due.Add(id, at)
	if a.wake.IsZero() || at.Before(a.wake) {
		a.armRequests(at)
	}
}

func (a *Agent) armRequests(at time.Time) {
	a.wake = at
	if a.requests == nil {
		a.requests = time.AfterFunc(time.Until(at), func() { a.send(&requestsDue{}) })
		return
	}
	a.requests.Reset(time.Until(at))
}

// onRequestsDue answers the session's requests whose deadline has come with their
// default, and arms the timer for the next one.
func (a *Agent) onRequestsDue() {
	a.wake = time.Time{}
	s := a.sess
	if s == nil {
		return
	}
	now := time.Now()
	for e, ok := s.due.PopDue(now); ok; e, ok = s.due.PopDue(now) {
		if p := s.open[e.Key]; p != nil && p.deadline.Equal(e.At) {
			a.answer(s, p, p.def, protocol.OutcomeTimedOut, "default", fmt.Sprintf("no answer within %v", p.deadline.Sub(p.readAt).Round(time.Millisecond)))
		}
	}
	if e, ok := s.due.Soonest(); ok {
		a.armRequests(e.At)
	}
}
