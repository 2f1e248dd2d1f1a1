package invariants

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/wire"
)

// TestViolations: the checker finds each kind of broken history, and passes a whole one.
func TestViolations(t *testing.T) {
	rec := func(kind, session string, attempt int, request, outcome string) wire.AuditRecord {
		return wire.AuditRecord{Kind: kind, Session: session, Attempt: attempt, Request: request, Outcome: outcome}
	}
	asked := func(r wire.AuditRecord) wire.AuditRecord {
		r.Asked = 1764000000000
		return r
	}
	whole := []wire.AuditRecord{
		rec("session.started", "s", 0, "", ""), rec("request", "s", 0, "q1", ""), // killed: no end
		rec("session.started", "s", 1, "", ""), rec("request", "s", 1, "q1", ""), rec("answer", "s", 1, "q1", "answered"),
		rec("request", "s", 1, "q1", ""), rec("answer", "s", 1, "q1", "invalid"), // a duplicate id, answered invalid
		asked(rec("answer", "s", 1, "q2", "answered")), // its request's one record
		rec("session.ended", "s", 1, "", "ok"),
	}
	if v := Violations(whole, []string{"s"}); len(v) != 0 {
		t.Fatalf("a whole history: %v", v)
	}
	for _, c := range []struct {
		name    string
		records []wire.AuditRecord
		want    string
	}{
		{"unanswered", []wire.AuditRecord{rec("session.started", "s", 0, "", ""), rec("request", "s", 0, "q1", ""), rec("session.ended", "s", 0, "", "ok")},
			"s#0: request q1 asked 1 times, answered 0 times"},
		{"an answer carrying its request, answered again", []wire.AuditRecord{rec("session.started", "s", 0, "", ""), asked(rec("answer", "s", 0, "q1", "")), rec("answer", "s", 0, "q1", ""), rec("session.ended", "s", 0, "", "ok")},
			"s#0: request q1 asked 1 times, answered 2 times"},
		{"answered twice", []wire.AuditRecord{rec("session.started", "s", 0, "", ""), rec("request", "s", 0, "q1", ""), rec("answer", "s", 0, "q1", ""), rec("answer", "s", 0, "q1", ""), rec("session.ended", "s", 0, "", "ok")},
			"answered 2 times"},
		{"never asked", []wire.AuditRecord{rec("session.started", "s", 0, "", ""), rec("answer", "s", 0, "q9", ""), rec("session.ended", "s", 0, "", "ok")},
			"1 answers to request q9, which it never asked"},
		{"ended twice", []wire.AuditRecord{rec("session.started", "s", 0, "", ""), rec("session.ended", "s", 0, "", "ok"), rec("session.ended", "s", 0, "", "ok")},
			"s#0: started 1 times, ended 2 times"},
		{"ended unstarted", []wire.AuditRecord{rec("session.ended", "s", 0, "", "ok")}, "ended only if started"},
		{"ok in two attempts", []wire.AuditRecord{rec("session.started", "s", 0, "", ""), rec("session.ended", "s", 0, "", "ok"), rec("session.started", "s", 1, "", ""), rec("session.ended", "s", 1, "", "ok")},
			"task s ended ok 2 times"},
		{"never ended", []wire.AuditRecord{rec("session.started", "s", 0, "", "")}, "task s ended ok 0 times"},
	} {
		v := Violations(c.records, []string{"s"})
		if !slices.ContainsFunc(v, func(s string) bool { return strings.Contains(s, c.want) }) {
			t.Errorf("%s: violations %v; want one saying %q", c.name, v, c.want)
		}
	}
}
