package wire

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// Task asks a node to run one session on a host.
type Task struct {
	ID     string `json:"id"`
	Host   string `json:"host"`
	Prompt string `json:"prompt"`
	// Resume continues an agent's earlier conversation (Claude Code): a session id from
	// an earlier result's payload, or "last".
	Resume string         `json:"resume,omitempty"`
	Meta   map[string]any `json:"meta,omitempty"`
	// By is who queued it (an API token's name, the CLI's user), recorded with the
	// session's start in the audit.
	By string `json:"by,omitempty"`
}

// Ask is what a supervisor receives on agentmux.ask.<supervisor>.
type Ask struct {
	Session string `json:"session"`
	Host    string `json:"host"`
	Type    string `json:"type"` // question, approval or tool_call
	ID      string `json:"id"`
	Text    string `json:"text"` // what routes matched: question, description or tool
	// Timeout is how long the asker waits for the answer from when it sent this copy of
	// the ask, in milliseconds: a supervisor's deadline is the ask's arrival plus
	// Timeout, on its own clock. Each copy sent again says what is left then.
	Timeout int64 `json:"timeout_ms,omitempty"`
	// Deadline is the same moment by the asking node's clock (unix milliseconds): shown
	// to people, and read by supervisors of nodes older than timeout_ms. A deadline
	// compared with another machine's clock is off by the two clocks' difference.
	Deadline int64           `json:"deadline"`
	Default  json.RawMessage `json:"default"` // what the runtime writes if no answer fits in time
	Request  json.RawMessage `json:"request"` // the canonical request as the agent sent it, id included
	// PostProcess: the route asks an llm supervisor to rework the tool's result.
	PostProcess bool `json:"post_process,omitempty"`
	// Node is the asking node, Attempt the session's attempt.
	Node    string `json:"node,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	// Conflicts are the other live sessions on the same repository that touched the
	// files this request would change (a host with workspaces).
	Conflicts []WorkspaceConflict `json:"conflicts,omitempty"`
}

// DeadlineFrom is the ask's deadline for a supervisor that received it at arrived, by
// the supervisor's clock: arrived plus Timeout; for an ask without one (an older node),
// Deadline as it stands; zero for an ask with neither.
func (a *Ask) DeadlineFrom(arrived time.Time) time.Time {
	switch {
	case a.Timeout > 0:
		return arrived.Add(time.Duration(a.Timeout) * time.Millisecond)
	case a.Deadline > 0:
		return time.UnixMilli(a.Deadline)
	}
	return time.Time{}
}

// ReplyKind is what a Reply has the asker write.
type ReplyKind uint8

// The kinds of Reply.
const (
	ReplyValue     ReplyKind = iota // Value, the supervisor's answer
	ReplyDefault                    // the request's default, as an answer: "use_default": true
	ReplyCancelled                  // no answer: the default is written as if none came: "cancelled": true
)

// Reply is a supervisor's answer: its Kind says what to write, Decider who decided
// ("rule:security", "static:default"). On the wire the kind is "use_default" or
// "cancelled" (true), or neither for a value; a reply saying both uses the default.
type Reply struct {
	Kind    ReplyKind       `json:"-"`
	Value   json.RawMessage `json:"value,omitempty"`
	Decider string          `json:"decider,omitempty"`
	Reason  string          `json:"reason,omitempty"`
	Member  string          `json:"member,omitempty"` // the node whose member answered
	// Claimed is the decider an external supervisor named: the runtime records it
	// apart, as words of that supervisor, and the decider as external:<supervisor>.
	Claimed string `json:"claimed,omitempty"`
	// Scope ScopeSession: the same request later in the same session gets this answer
	// at once, decided by session:<decider> (approve for the session).
	Scope string `json:"scope,omitempty"`
	// Grant is the grant the answer gave (scope session or host): revoked, it no
	// longer stands.
	Grant string `json:"grant,omitempty"`
}

// ScopeSession is the scope of an answer that stands for the rest of its session.
const ScopeSession = "session"

// ForSession reads an approval's answer "yes for session" as what it means: "yes",
// standing for the rest of the session (ScopeSession). Any other answer, or an answer
// to anything but an approval, is returned as it is, with no scope.
func ForSession(typ string, value json.RawMessage) (json.RawMessage, string) {
	if typ == "approval" && string(bytes.TrimSpace(value)) == `"yes for session"` {
		return json.RawMessage(`"yes"`), ScopeSession
	}
	return value, ""
}

// AuditGrantRevoked is the kind of the record of a grant revoked (Grant).
const AuditGrantRevoked = "grant.revoked"

// AuditRecord is one entry of the audit stream.
type AuditRecord struct {
	Kind     string `json:"kind"` // session.started, request, answer, session.ended, grant.revoked
	Time     int64  `json:"time"` // unix milliseconds
	Node     string `json:"node"`
	Host     string `json:"host"`
	Session  string `json:"session"`
	Attempt  int    `json:"attempt"`            // of the session: retries and redeliveries count up
	Pipeline string `json:"pipeline,omitempty"` // a stage's session: its pipeline run's pipeline
	Stage    string `json:"stage,omitempty"`
	Request  string `json:"request,omitempty"`
	Type     string `json:"type,omitempty"`
	Text     string `json:"text,omitempty"`
	// Ask, on a request's record, is the request as its agent asked it (its canonical
	// JSON: a tool call's tool and input, a question's options): what `agentmux policy`
	// learns rules from and decides again.
	Ask json.RawMessage `json:"ask,omitempty"`
	// By, on a session's start, is who asked for the session: who submitted its task,
	// or the user of an attached agent.
	By string `json:"by,omitempty"`
	// Asked, on an answer, is when its request was read (unix milliseconds): the
	// answer came soon enough to be written as the request's one record, in place of a
	// request record and an answer record.
	Asked   int64           `json:"asked,omitempty"`
	Value   json.RawMessage `json:"value,omitempty"`
	Outcome string          `json:"outcome,omitempty"`
	Decider string          `json:"decider,omitempty"`
	Claimed string          `json:"claimed,omitempty"` // the decider an external supervisor named
	Member  string          `json:"member,omitempty"`  // the node that sent a refused answer
	Reason  string          `json:"reason,omitempty"`
	// Given and GivenBy, on a shadow's decision, are the answer given to the request and
	// who decided it; none when no answer was given before the session ended.
	Given   json.RawMessage `json:"given,omitempty"`
	GivenBy string          `json:"given_by,omitempty"`
	// Scope, on an answer, is what a person gave it for beyond its request (session,
	// host); on a grant's revocation, the grant's.
	Scope    string  `json:"scope,omitempty"`
	Latency  float64 `json:"latency_ms,omitempty"`
	Duration float64 `json:"duration_ms,omitempty"`
	Error    string  `json:"error,omitempty"`
	// Truncated is how many bytes the record had before its text, value, reason and
	// error were cut to fit the server's payload limit (Fit); 0 when it was whole.
	Truncated int `json:"truncated,omitempty"`
	// Workspace, on a session's end, is what it left in its workspace.
	Workspace *Workspace `json:"workspace,omitempty"`
	// Spend, on a session's end, is what its model calls cost.
	Spend *Spend `json:"spend,omitempty"`
}

// Fit cuts the record's text, reason and error to keep bytes each, and drops its value,
// its ask and the answer given when longer (a value cut in two would not be JSON), noting in Truncated how
// long the record was: a record over the server's payload limit is stored so, never
// retried for ever.
func (r *AuditRecord) Fit(was, keep int) {
	cut := func(s string) string {
		if len(s) <= keep {
			return s
		}
		return strings.ToValidUTF8(s[:keep], "") + "…"
	}
	r.Text, r.Reason, r.Error = cut(r.Text), cut(r.Reason), cut(r.Error)
	if len(r.Value) > keep {
		r.Value = nil
	}
	if len(r.Ask) > keep {
		r.Ask = nil
	}
	if len(r.Given) > keep {
		r.Given = nil
	}
	r.Truncated = was
}

// AuditID is the deduplication id of an audit record of one attempt of a session:
// every attempt keeps its own records, and a retried or redelivered one loses none.
func AuditID(session string, attempt int, what string) string {
	return session + "." + strconv.Itoa(attempt) + "." + what
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
