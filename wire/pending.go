package wire

import (
	"encoding/json"
	"time"

	"github.com/agentmux/agentmux/protocol"
)

// PendingBucket is the JetStream KV bucket of requests waiting for a person.
const PendingBucket = "agentmux_pending"

// Pending request states.
const (
	StatePending   = "pending"
	StateAnswered  = "answered"  // a person answered; not yet delivered
	StateDelivered = "delivered" // the answer went to the agent
	StateCancelled = "cancelled" // the request ended first: no answer can reach it
)

// PendingRequest is one request waiting for a person.
type PendingRequest struct {
	ID         string          `json:"id"` // what `agentmux respond` takes
	Supervisor string          `json:"supervisor"`
	Host       string          `json:"host"`
	Session    string          `json:"session"`
	Request    string          `json:"request"` // the agent's request id
	Type       string          `json:"type"`
	Text       string          `json:"text"`
	Body       json.RawMessage `json:"body,omitempty"` // the request as the agent sent it
	Options    []string        `json:"options,omitempty"`
	Default    json.RawMessage `json:"default,omitempty"`
	Created    time.Time       `json:"created"`
	Deadline   time.Time       `json:"deadline"`
	ReplyTo    string          `json:"reply_to"`
	Suggestion json.RawMessage `json:"suggestion,omitempty"` // what an escalating supervisor would have answered
	Escalation string          `json:"escalation,omitempty"` // why it was escalated, and by whom
	// EscalatedBy is the supervisor that escalated it: a person's "always" is saved in
	// its rules file when it has one.
	EscalatedBy string `json:"escalated_by,omitempty"`
	// Risk is the request's risk (low, medium, high, critical): the escalating model's
	// rating, else the agent's own (an approval's risk_level); "" when neither rated it.
	Risk string `json:"risk,omitempty"`

	State      string          `json:"state"`
	Value      json.RawMessage `json:"value,omitempty"`
	Responder  string          `json:"responder,omitempty"`
	Via        string          `json:"via,omitempty"`    // ViaToken: an API token's answer, not a person's
	Reason     string          `json:"reason,omitempty"` // why, in the person's words (a deny's reason)
	Scope      string          `json:"scope,omitempty"`  // "session": the answer stands for the rest of the session
	AnsweredAt time.Time       `json:"answered_at,omitzero"`
	// Node and Attempt are the asking node and the session's attempt: a request whose
	// node is gone is cancelled, and audited on that attempt.
	Node    string `json:"node,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	// Cancelled says why a cancelled request ended before a person answered.
	Cancelled string `json:"cancelled,omitempty"`
	// Conflicts are the other live sessions that touched the files the request would
	// change (Ask.Conflicts): the person sees them.
	Conflicts []WorkspaceConflict `json:"conflicts,omitempty"`
}

// Message is the request as the agent sent it.
func (p *PendingRequest) Message() *protocol.Message {
	return protocol.RequestOf(p.Body, p.Type, p.Text)
}

// Decider is who answered, as the audit records it: human:<name> for a person,
// token:<name> for an API token (a CI job, a bot).
func (p *PendingRequest) Decider() string {
	if p.Via == ViaToken {
		return "token:" + p.Responder
	}
	return "human:" + p.Responder
}

// ViaToken is RespondRequest.Via of an answer an API token gave.
const ViaToken = "token"

// RespondRequest is what `agentmux respond` sends on agentmux.respond.<user>.<id>.
type RespondRequest struct {
	Value  json.RawMessage `json:"value"`
	Reason string          `json:"reason,omitempty"` // why, for the agent and the audit (a deny's reason)
	Scope  string          `json:"scope,omitempty"`  // "session": it stands for the same request later in the session
	// Via is ViaToken when the console gives the answer of an API token in its name:
	// the audit then says token:<name>, not human:<name>. A person's answer leaves it out.
	Via string `json:"via,omitempty"`
}

// Codes of a refused RespondReply.
const (
	RespondNoSuch       = "no_such_request"
	RespondInvalid      = "invalid_answer"
	RespondAnswered     = "already_answered"
	RespondPastDeadline = "past_deadline"
	RespondCancelled    = "cancelled"
	RespondFailed       = "failed"
	RespondForbidden    = "forbidden" // the person may look, not answer
)

// RespondReply says whether the answer was taken; Code and Error say why not.
type RespondReply struct {
	OK      bool            `json:"ok"`
	Pending *PendingRequest `json:"pending,omitempty"`
	Grant   *Grant          `json:"grant,omitempty"` // a grant revoked
	Code    string          `json:"code,omitempty"`
	Error   string          `json:"error,omitempty"`
}

// HumanSubject announces a request waiting for a person.
func HumanSubject(supervisor, id string) string { return humanPrefix + supervisor + "." + id }

// HumanSubjects matches every announcement.
const HumanSubjects = humanPrefix + ">"

// RespondSubject is where the person name answers the request waiting for a person id;
// only that user may publish there, so a node records who answered from the subject.
// A person's dots (an email's) are written %2E, as a subject's token holds none.
func RespondSubject(name, id string) string { return personFirst(respondPrefix, name, id) }

// RespondSubjects matches every answer of every user.
const RespondSubjects = respondPrefix + "*.>"

// ParseRespondSubject splits an answer's subject into the user and the request id.
func ParseRespondSubject(subject string) (user, id string, ok bool) {
	return parsePersonFirst(respondPrefix, subject)
}

// PendingSubjects are the writes of the pending bucket, which tell the console what to
// read again (store.PendingStore.Watch).
const PendingSubjects = PendingKeys + ">"

// PendingKeys is the pending bucket's subject prefix: PendingKeys + a request's id.
const PendingKeys = "$KV." + PendingBucket + "."
