package wire

import (
	"encoding/json"
	"strings"
)

// EventMark is the reply subject of every event and announcement a node publishes;
// nothing answers there. The server never sends a message with such a reply, so the
// answers a reader of the bus can have it send to an event subject (bus.CheckEvent) do
// not pass for events.
const EventMark = "agentmux.event"

// Events published on agentmux.evt.<host>.<session>.<type> besides the agent's own
// types (progress, question, result, …) and the pipelines' (pipelines.go).
const (
	EventSessionStarted  = "session.started"
	EventSessionEnded    = "session.ended"
	EventRequestAnswered = "request.answered"
	// EventSessionPaused: a session reached its budget; a budget request asks its
	// supervisors whether it goes on (SessionPaused).
	EventSessionPaused = "session.paused"
	// EventSessionResumed: its budget was raised and the session goes on (SessionPaused).
	EventSessionResumed = "session.resumed"
	EventFrameTooLong   = "frame_too_long"
	EventFrameInvalid   = "frame_invalid"
	EventStderr         = "agent.stderr"
	// EventResultInvalid: a result did not fit the session's schema; a new prompt says why.
	EventResultInvalid = "result.invalid"
	// EventWorkspaceTouched: a session in a workspace is about to change files, or has
	// (WorkspaceTouch); every node's conflict radar reads them.
	EventWorkspaceTouched = "workspace.touched"
	// EventWorkspaceConflict: two live sessions on one repository touch the same files
	// (WorkspaceConflict).
	EventWorkspaceConflict = "workspace.conflict"
)

// EventSubject is where one event of a session is published.
func EventSubject(host, session, typ string) string {
	return evtPrefix + host + "." + session + "." + typ
}

// ParseEventSubject splits an event subject into host, session and type.
func ParseEventSubject(subject string) (host, session, typ string, ok bool) {
	rest, found := strings.CutPrefix(subject, evtPrefix)
	if !found {
		return "", "", "", false
	}
	parts := strings.SplitN(rest, ".", 3)
	if len(parts) != 3 {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// EventsOfType matches the events of type typ of every session.
func EventsOfType(typ string) string { return evtPrefix + "*.*." + typ }

// SessionEvents matches every event of one session.
func SessionEvents(host, session string) string { return evtPrefix + host + "." + session + ".>" }

// AllEvents matches every event of every session.
const AllEvents = evtPrefix + ">"

// SessionStarted is the payload of a session.started event.
type SessionStarted struct {
	Session  string `json:"session"`
	Host     string `json:"host"`
	Task     string `json:"task,omitempty"`
	Node     string `json:"node"`
	Attempt  int    `json:"attempt"`
	Pipeline string `json:"pipeline,omitempty"` // a stage's session
	Stage    string `json:"stage,omitempty"`
}

// SessionEnded is the payload of a session.ended event.
type SessionEnded struct {
	Session  string          `json:"session"`
	Host     string          `json:"host"`
	Task     string          `json:"task,omitempty"`
	Node     string          `json:"node,omitempty"`
	Attempt  int             `json:"attempt"`
	Pipeline string          `json:"pipeline,omitempty"` // a stage's session
	Stage    string          `json:"stage,omitempty"`
	Outcome  string          `json:"outcome"` // ok or error
	Result   json.RawMessage `json:"result,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"` // a typed result: the JSON that fit its schema
	Error    string          `json:"error,omitempty"`
	Duration float64         `json:"duration_ms"`
	// Workspace is what the session left in its workspace, on a host that gives each
	// session one.
	Workspace *Workspace `json:"workspace,omitempty"`
	// Spend is what its model calls cost, when the agent reported any.
	Spend *Spend `json:"spend,omitempty"`
}

// RequestAnswered is the payload of a request.answered event.
type RequestAnswered struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Value   json.RawMessage `json:"value"`
	Outcome string          `json:"outcome"`
	Decider string          `json:"decider"`
	Claimed string          `json:"claimed,omitempty"` // the decider an external supervisor named
	Reason  string          `json:"reason,omitempty"`
	Latency float64         `json:"latency_ms"`
}

// SessionRow is a session as the console shows it and GET /v1/sessions lists it,
// kept from its events.
type SessionRow struct {
	ID       string  `json:"id"`
	Host     string  `json:"host"`
	Node     string  `json:"node"`
	Attempt  int     `json:"attempt"`
	State    string  `json:"state"` // running, ok or error
	Started  int64   `json:"started"`
	Ended    int64   `json:"ended,omitempty"`
	Duration float64 `json:"duration_ms,omitempty"`
	// Spend is what its model calls cost, once it ended (nil: its agent reported none).
	Spend    *Spend `json:"spend,omitempty"`
	Error    string `json:"error,omitempty"`
	Pipeline string `json:"pipeline,omitempty"`
	Stage    string `json:"stage,omitempty"`
	// Paused, while the session is paused, is why: at its budget, "spent " and the
	// limits it reached; at its usage limit or by hand, "until <time>: " and why.
	Paused string `json:"paused,omitempty"`
	Last   string `json:"last"` // the type of its last event
	LastAt int64  `json:"last_at"`
	// Conflict says which other session touched the same files, and which files
	// (workspace.conflict), while both ran.
	Conflict string `json:"conflict,omitempty"`
}
