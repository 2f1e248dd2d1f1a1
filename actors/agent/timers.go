package agent

import (
	"container/heap"
	"fmt"
	"time"

	"github.com/agentmux/agentmux/protocol"
)

// timerKind names what a timer bounds.
type timerKind int

const (
	timerInit      timerKind = iota // init_ack must arrive
	timerSession                    // the host's timeout
	timerIdle                       // the host's idle_timeout
	timerInterrupt                  // an interrupted session must end by itself
	timerDrain                      // stdout must close after the process exited
	timerTerm                       // stop ladder: SIGTERM to the group
	timerKill                       // stop ladder: SIGKILL to the group
)

// after sends a timerFired to the actor after d. Timers are never reset in place: each
// carries the generation it was armed for, and the actor ignores stale ones.
func (a *Agent) after(d time.Duration, kind timerKind, gen uint64) *time.Timer {
	msg := &timerFired{kind: kind, gen: gen}
	return time.AfterFunc(d, func() { a.send(msg) })
}

// Request deadlines share one timer per agent, armed for the soonest: a request costs a
// heap entry, not a timer of its own. An answered request's entry is dropped once it is
// the soonest, or skipped when it falls due; the timer is not stopped early (a fire
// with nothing due arms it for the next).

// dueRequest is when a request of the session falls due.
type dueRequest struct {
	at time.Time
	id string
}

// dueRequests is a container/heap of a session's request deadlines, soonest first.
type dueRequests []dueRequest

func (h dueRequests) Len() int           { return len(h) }
func (h dueRequests) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueRequests) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueRequests) Push(x any)        { *h = append(*h, x.(dueRequest)) }
func (h *dueRequests) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// dropAnswered drops the soonest entries whose request is no longer pending, so that a
// long session's heap holds about its outstanding requests, not all it ever asked.
func (h *dueRequests) dropAnswered(pending map[string]*pending) {
	for len(*h) > 0 {
		if p := pending[(*h)[0].id]; p != nil && p.deadline.Equal((*h)[0].at) {
			return
		}
		heap.Pop(h)
	}
}

// requestsDue tells the actor that the soonest request deadline may have come.
type requestsDue struct{}

// dueAt makes request id of session s due at at.
func (a *Agent) dueAt(s *session, at time.Time, id string) {
	heap.Push(&s.due, dueRequest{at: at, id: id})
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
	for len(s.due) > 0 && !s.due[0].at.After(now) {
		e := heap.Pop(&s.due).(dueRequest)
		if p := s.pending[e.id]; p != nil && p.deadline.Equal(e.at) {
			a.answer(s, p, p.def, protocol.OutcomeTimedOut, "default", fmt.Sprintf("no answer within %v", p.deadline.Sub(p.readAt).Round(time.Millisecond)))
		}
	}
	if len(s.due) > 0 {
		a.armRequests(s.due[0].at)
	}
}
