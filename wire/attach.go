package wire

import "encoding/json"

// AttachRequest is one request of an agent session agentmux did not start, sent by the
// console on agentmux.attach.<source> for a hook or an API client.
type AttachRequest struct {
	// Session is the agent's own session id; the agentmux session is keyed by it.
	Session string `json:"session"`
	// User is who the API token that sent it names; a session belongs to the user that
	// opened it, and only that user's requests go to it.
	User       string `json:"user"`
	Cwd        string `json:"cwd,omitempty"`
	Transcript string `json:"transcript,omitempty"`
	// Event is the hook event that sent it (PreToolUse, PermissionRequest, SessionEnd).
	Event string `json:"event,omitempty"`
	// End ends the session (the agent's SessionEnd): no Request.
	End bool `json:"end,omitempty"`
	// Request is the canonical request, as an agent of the native protocol writes it:
	// {"type":"approval","id","description","tool","input"}.
	Request json.RawMessage `json:"request,omitempty"`
}

// AttachReply is a node's answer to an AttachRequest: the request's response, or why it
// was refused.
type AttachReply struct {
	Session string          `json:"session"` // the agentmux session
	Attempt int             `json:"attempt,omitempty"`
	Node    string          `json:"node,omitempty"`
	Value   json.RawMessage `json:"value,omitempty"`
	Outcome string          `json:"outcome,omitempty"`
	Reason  string          `json:"reason,omitempty"`
	// Code says why the request was refused: AttachForbidden, AttachInvalid, AttachBusy,
	// AttachEnded; Error says it in words.
	Code  string `json:"code,omitempty"`
	Error string `json:"error,omitempty"`
}

// Why an attached request is refused.
const (
	AttachForbidden = "forbidden" // the session belongs to another user
	AttachInvalid   = "invalid"   // not a request agentmux can decide
	AttachBusy      = "busy"      // the node keeps max_sessions of the source open
	AttachEnded     = "ended"     // the session ended before it was answered
)

// attachPrefix starts the subjects of sessions agentmux did not start (package attach).
const attachPrefix = "agentmux.attach."

// AttachSubject is where the requests of an attached source's sessions are sent; the
// nodes that run the source share queue group AttachQueue.
func AttachSubject(source string) string { return attachPrefix + source }

// AttachNodeSubject is where one node takes the requests of the source's sessions it
// holds: a node that took a request for a session another node holds sends it on there.
func AttachNodeSubject(source, node string) string { return attachPrefix + source + "." + node }

// AttachSubjects matches every attach subject.
const AttachSubjects = attachPrefix + ">"

// AttachQueue is the queue group of the nodes that take attached requests.
const AttachQueue = "agentmux-attach"
