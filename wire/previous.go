package wire

import (
	"strings"

	"github.com/agentmux/agentmux/protocol"
)

// Replayable reports whether an answer can be given again to the same request in a
// later attempt: a supervisor's or person's answer, not a default, the runtime's, or
// one that was itself given again (replay, session).
func Replayable(outcome, decider string) bool {
	kind, _, _ := strings.Cut(decider, ":")
	return outcome == string(protocol.OutcomeAnswered) && kind != "default" && kind != "runtime" && kind != "replay" && kind != "session"
}

// PreviousFromAudit is what the attempts of a session before attempt did, read from
// its audit records: how the last one ended (or that its node was gone), and each
// request a supervisor or person answered, for a task delivered again to be told of
// them and to have those answers replayed. nil when no earlier attempt left a record.
func PreviousFromAudit(records []*AuditRecord, attempt int) *protocol.PreviousAttempt {
	type key struct {
		attempt int
		id      string
	}
	asked := map[key]*AuditRecord{}
	var prev *protocol.PreviousAttempt
	last, ended := -1, false
	for _, r := range records {
		if r.Attempt >= attempt {
			continue
		}
		if prev == nil {
			prev = &protocol.PreviousAttempt{}
		}
		if r.Attempt > last {
			last, ended = r.Attempt, false
			prev.Error = ""
		}
		switch r.Kind {
		case "request":
			asked[key{r.Attempt, r.Request}] = r
		case "answer":
			q := asked[key{r.Attempt, r.Request}]
			if q == nil && r.Asked != 0 {
				q = r // the answer carries its request
			}
			if q == nil || !Replayable(r.Outcome, r.Decider) {
				continue
			}
			prev.Requests = append(prev.Requests, protocol.PriorAnswer{Attempt: r.Attempt, Type: q.Type, Text: q.Text, Value: r.Value, Decider: r.Decider})
		case "session.ended":
			if r.Attempt == last {
				ended, prev.Error = true, r.Error
			}
		}
	}
	if prev == nil {
		return nil
	}
	prev.Attempt = last
	if !ended {
		prev.Error = "the node running it was gone before it ended"
	}
	return prev
}
