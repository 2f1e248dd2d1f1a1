package console

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentmux/agentmux/wire"
)

// Bounds of the view.
const (
	// A request answered or cancelled stays on the page this long, saying by whom.
	settledKept = 5 * time.Minute
	// A page whose stream falls this many updates behind is cut off; it reconnects and
	// gets a snapshot.
	clientBuffer = 256
)

// update is one message of a page's stream.
type update struct {
	Type     string                 `json:"type"` // snapshot, pending, session
	Pending  []*wire.PendingRequest `json:"pending,omitempty"`
	Sessions []*wire.SessionRow     `json:"sessions,omitempty"`
}

// view is what every page shows, kept current from the bus, with the pages to tell.
type view struct {
	mu       sync.Mutex
	pending  map[string]*wire.PendingRequest
	sessions map[string]*wire.SessionRow
	recent   int // ended sessions kept
	clients  map[chan []byte]struct{}
}

func newView(recent int) *view {
	return &view{pending: map[string]*wire.PendingRequest{}, sessions: map[string]*wire.SessionRow{}, recent: recent, clients: map[chan []byte]struct{}{}}
}

// subscribe returns a channel of a page's updates, the first one a snapshot.
func (v *view) subscribe() chan []byte {
	v.mu.Lock()
	defer v.mu.Unlock()
	c := make(chan []byte, clientBuffer)
	c <- encode(&update{Type: "snapshot", Pending: v.pendingList(), Sessions: v.sessionList()})
	v.clients[c] = struct{}{}
	return c
}

// unsubscribe forgets a page; a page cut off for falling behind is forgotten already.
func (v *view) unsubscribe(c chan []byte) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.clients[c]; ok {
		delete(v.clients, c)
		close(c)
	}
}

// broadcast tells every page; callers hold mu.
func (v *view) broadcast(u *update) {
	data := encode(u)
	for c := range v.clients {
		select {
		case c <- data:
		default: // too far behind: it reconnects and starts from a snapshot
			delete(v.clients, c)
			close(c)
		}
	}
}

func encode(u *update) []byte {
	data, _ := json.Marshal(u)
	return data
}

func (v *view) onPending(p *wire.PendingRequest) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.pending[p.ID] = p
	v.prunePending(time.Now())
	v.broadcast(&update{Type: "pending", Pending: []*wire.PendingRequest{p}})
}

// prunePending forgets requests settled long ago; callers hold mu.
func (v *view) prunePending(now time.Time) {
	for id, p := range v.pending {
		if p.State != wire.StatePending && now.Sub(settledAt(p)) > settledKept {
			delete(v.pending, id)
		}
	}
}

func settledAt(p *wire.PendingRequest) time.Time {
	if !p.AnsweredAt.IsZero() {
		return p.AnsweredAt
	}
	return p.Deadline
}

// pendingList is the requests, soonest deadline first; callers hold mu.
func (v *view) pendingList() []*wire.PendingRequest {
	v.prunePending(time.Now())
	out := make([]*wire.PendingRequest, 0, len(v.pending))
	for _, p := range v.pending {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Deadline.Equal(out[j].Deadline) {
			return out[i].Deadline.Before(out[j].Deadline)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// onEvent notes a session's event: its start and end, or what it last did.
func (v *view) onEvent(subject string, data []byte) {
	host, id, typ, ok := wire.ParseEventSubject(subject)
	if !ok || id == "_" {
		return
	}
	now := time.Now().UnixMilli()
	v.mu.Lock()
	defer v.mu.Unlock()
	s := v.sessions[id]
	if s == nil {
		s = &wire.SessionRow{ID: id, Host: host, State: "running", Started: now}
		v.sessions[id] = s
	}
	s.Last, s.LastAt = typ, now
	var touched []*wire.SessionRow // the other sessions an event changes
	switch typ {
	case wire.EventWorkspaceConflict:
		var e wire.ConflictEvent
		if json.Unmarshal(data, &e) == nil {
			files := strings.Join(e.With.Paths, ", ")
			s.Conflict = fmt.Sprintf("touches %s, as %s does", files, e.With.Session)
			if o := v.sessions[e.With.Session]; o != nil && o.State == "running" {
				o.Conflict = fmt.Sprintf("touches %s, as %s does", files, id)
				c := *o
				touched = append(touched, &c)
			}
		}
	case "session.started":
		var e wire.SessionStarted
		if json.Unmarshal(data, &e) == nil {
			s.Node, s.Attempt, s.Pipeline, s.Stage, s.State, s.Ended, s.Error = e.Node, e.Attempt, e.Pipeline, e.Stage, "running", 0, ""
		}
	case wire.EventSessionPaused:
		var e wire.SessionPaused
		if json.Unmarshal(data, &e) == nil {
			s.Paused = "spent " + e.Reason // at its budget
			if e.Until > 0 {               // at its usage limit, or by hand: till when
				s.Paused = fmt.Sprintf("until %s: %s", time.UnixMilli(e.Until).UTC().Format(time.RFC3339), e.Reason)
			}
		}
	case wire.EventSessionResumed:
		s.Paused = ""
	case "session.ended":
		var e wire.SessionEnded
		if json.Unmarshal(data, &e) == nil {
			s.Node, s.Attempt, s.State, s.Error, s.Duration, s.Ended, s.Spend = e.Node, e.Attempt, e.Outcome, e.Error, e.Duration, now, e.Spend
			s.Pipeline, s.Stage = e.Pipeline, e.Stage
			if e.Outcome != wire.OutcomePaused {
				s.Paused = ""
			}
		}
		v.pruneSessions()
	}
	c := *s
	v.broadcast(&update{Type: "session", Sessions: append([]*wire.SessionRow{&c}, touched...)})
}

// pruneSessions keeps the most recent ended sessions; callers hold mu.
func (v *view) pruneSessions() {
	var ended []*wire.SessionRow
	for _, s := range v.sessions {
		if s.State != "running" {
			ended = append(ended, s)
		}
	}
	if len(ended) <= v.recent {
		return
	}
	sort.Slice(ended, func(i, j int) bool { return ended[i].Ended > ended[j].Ended })
	for _, s := range ended[v.recent:] {
		delete(v.sessions, s.ID)
	}
}

// sessionList is running sessions, then ended ones, most recent first; callers hold mu.
func (v *view) sessionList() []*wire.SessionRow {
	out := make([]*wire.SessionRow, 0, len(v.sessions))
	for _, s := range v.sessions {
		c := *s
		out = append(out, &c)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if (a.State == "running") != (b.State == "running") {
			return a.State == "running"
		}
		return a.LastAt > b.LastAt
	})
	return out
}
