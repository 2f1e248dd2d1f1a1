package wire

import (
	"encoding/json"
	"strconv"
	"strings"
)

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

// AuditSubject is where a session's audit records go.
func AuditSubject(host, session string) string { return auditPrefix + host + "." + session }

// ParseAuditSubject splits an audit subject into its host and session.
func ParseAuditSubject(subject string) (host, session string, ok bool) {
	rest, ok := strings.CutPrefix(subject, auditPrefix)
	if !ok {
		return "", "", false
	}
	host, session, ok = strings.Cut(rest, ".")
	return host, session, ok && host != "" && session != "" && !strings.Contains(session, ".")
}

// AuditSubjects matches every audit subject.
const AuditSubjects = auditPrefix + ">"
