package wire

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
)

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

// AskSubject is where requests for supervisor are sent; members share queue group supervisor.
func AskSubject(supervisor string) string { return askPrefix + supervisor }

// ParseAskSubject returns the supervisor an ask's subject (AskSubject or
// AskMemberSubject) names.
func ParseAskSubject(subject string) (supervisor string, ok bool) {
	rest, ok := strings.CutPrefix(subject, askPrefix)
	supervisor, _, _ = strings.Cut(rest, ".")
	return supervisor, ok && supervisor != ""
}

// AskMemberSubject is where one member (node) of supervisor takes asks addressed to it
// alone: an ask is sent there when the member the queue group picked fell silent.
func AskMemberSubject(supervisor, member string) string { return askPrefix + supervisor + "." + member }
