package policy

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/agentmux/agentmux/permission"
	"github.com/agentmux/agentmux/wire"
)

// Decided is one past approval and how it was decided.
type Decided struct {
	Host, Session, Request string
	Call                   permission.Call
	Text                   string // what it asked, as the audit shows it
	Value                  string // the answer: "yes", "no", or an option
	Decider                string // who decided: human:ana, rule:ops, session:human:ana, …
	At                     time.Time
}

// Approved reports whether it was approved.
func (d *Decided) Approved() bool { return d.Value == "yes" }

// Person reports whether a person decided it, or an answer a person gave for its
// session or host.
func (d *Decided) Person() bool {
	decider := d.Decider
	for _, scope := range []string{"session:", "host:"} {
		decider = strings.TrimPrefix(decider, scope)
	}
	return strings.HasPrefix(decider, "human:")
}

// FromAudit is the approvals in records that were answered (not defaulted, timed out or
// cancelled) and name the tool call they asked for, oldest first. An answer's request
// is read from its own record (the request's one record) or from its request record.
func FromAudit(records []*wire.AuditRecord) []Decided {
	requests := requestRecords(records)
	var out []Decided
	for _, r := range records {
		if r.Kind != "answer" || r.Type != "approval" || r.Outcome != "answered" {
			continue
		}
		ask, text := r.Ask, r.Text
		if q := requests[requestKey(r)]; q != nil { // asked, and answered later: the request's record says what
			ask, text = q.Ask, q.Text
		}
		call, ok := permission.FromApproval(ask)
		if !ok {
			continue
		}
		var value string
		if json.Unmarshal(r.Value, &value) != nil {
			continue
		}
		out = append(out, Decided{Host: r.Host, Session: r.Session, Request: r.Request, Call: call, Text: text,
			Value: value, Decider: r.Decider, At: time.UnixMilli(r.Time)})
	}
	return out
}

// requestKey names the request a record is of: its session, attempt and request id.
func requestKey(r *wire.AuditRecord) string {
	return r.Session + "\x00" + strconv.Itoa(r.Attempt) + "\x00" + r.Request
}

// requestRecords are records' request records by requestKey: a request answered later
// than it was asked has one, which holds what it asked (its ask and text) for the answer.
func requestRecords(records []*wire.AuditRecord) map[string]*wire.AuditRecord {
	out := map[string]*wire.AuditRecord{}
	for _, r := range records {
		if r.Kind == "request" {
			out[requestKey(r)] = r
		}
	}
	return out
}
