package store

import (
	"sync"
	"time"

	"github.com/agentmux/agentmux/wire"
)

// waitingIndex is which requests of each session wait for a person, as this node has
// seen them: those it created, and every change its watches of the bucket saw. It is
// what a human supervisor caps a session's waiting requests by, without reading the
// bucket for each request.
type waitingIndex struct {
	mu       sync.Mutex                      // protects the maps
	sessions map[string]map[string]time.Time // session → request id → deadline
	owner    map[string]string               // request id → session
}

func newWaitingIndex() *waitingIndex {
	return &waitingIndex{sessions: map[string]map[string]time.Time{}, owner: map[string]string{}}
}

// note records p's state: waiting, or no longer.
func (x *waitingIndex) note(p *wire.PendingRequest) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if p.State != wire.StatePending {
		x.forgetLocked(p.ID)
		return
	}
	ids := x.sessions[p.Session]
	if ids == nil {
		ids = map[string]time.Time{}
		x.sessions[p.Session] = ids
	}
	ids[p.ID], x.owner[p.ID] = p.Deadline, p.Session
}

// forget drops request id (purged from the bucket).
func (x *waitingIndex) forget(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.forgetLocked(id)
}

func (x *waitingIndex) forgetLocked(id string) {
	session, ok := x.owner[id]
	if !ok {
		return
	}
	delete(x.owner, id)
	delete(x.sessions[session], id)
	if len(x.sessions[session]) == 0 {
		delete(x.sessions, session)
	}
}

// admit counts id among the requests of session that wait for a person, unless max of
// the others already do at now; it returns how many others do. Counting and adding at
// once, requests of one session asked together cannot all pass a count none of them is
// in yet.
func (x *waitingIndex) admit(session, id string, deadline, now time.Time, max int) (int, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for other, due := range x.sessions[session] {
		if other != id && now.Before(due) {
			n++
		}
	}
	if _, again := x.sessions[session][id]; !again && n >= max {
		return n, false
	}
	ids := x.sessions[session]
	if ids == nil {
		ids = map[string]time.Time{}
		x.sessions[session] = ids
	}
	ids[id], x.owner[id] = deadline, session
	return n, true
}
