package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/bus"
)

// checkInvariants asserts docs/reliability.md's invariants over the fleet's whole audit,
// once a fault test has settled (see violations).
func checkInvariants(t *testing.T, js jetstream.JetStream, ended ...string) {
	t.Helper()
	for _, v := range violations(auditRecords(t, js), ended) {
		t.Error(v)
	}
}

// violations lists how records break the invariants:
//
//   - I1/I4: in every attempt that ended, each request has exactly one answer (answered,
//     timed out, cancelled or invalid), and no answer is to a request it never asked;
//   - each attempt starts at most once and ends at most once, and never ends unstarted;
//   - each task of ended ends ok exactly once across its attempts (the attempt chain).
//
// An attempt cut short by a killed node may lack its last records: its node died with
// them, and the task ran again as a new attempt.
func violations(records []bus.AuditRecord, ended []string) []string {
	type attempt struct {
		started, ended int
		asked, answers map[string]int // by request id
	}
	attempts := map[string]*attempt{}
	ok := map[string]int{}
	for _, r := range records {
		key := r.Session + "#" + strconv.Itoa(r.Attempt)
		a := attempts[key]
		if a == nil {
			a = &attempt{asked: map[string]int{}, answers: map[string]int{}}
			attempts[key] = a
		}
		switch r.Kind {
		case "session.started":
			a.started++
		case "session.ended":
			a.ended++
			if r.Outcome == "ok" {
				ok[r.Session]++
			}
		case "request":
			a.asked[r.Request]++
		case "answer":
			a.answers[r.Request]++
		}
	}
	var out []string
	for key, a := range attempts {
		if a.started > 1 || a.ended > 1 || (a.ended == 1 && a.started == 0) {
			out = append(out, fmt.Sprintf("%s: started %d times, ended %d times; want once each at most, ended only if started", key, a.started, a.ended))
		}
		if a.ended == 0 {
			continue
		}
		for id, n := range a.answers {
			if a.asked[id] == 0 {
				out = append(out, fmt.Sprintf("%s: %d answers to request %s, which it never asked", key, n, id))
			}
		}
		for id, n := range a.asked {
			if a.answers[id] != n {
				out = append(out, fmt.Sprintf("%s: request %s asked %d times, answered %d times; want one answer each", key, id, n, a.answers[id]))
			}
		}
	}
	for _, id := range ended {
		if ok[id] != 1 {
			out = append(out, fmt.Sprintf("task %s ended ok %d times across its attempts; want exactly once", id, ok[id]))
		}
	}
	slices.Sort(out)
	return out
}

// TestViolations: the checker finds each kind of broken history, and passes a whole one.
func TestViolations(t *testing.T) {
	rec := func(kind, session string, attempt int, request, outcome string) bus.AuditRecord {
		return bus.AuditRecord{Kind: kind, Session: session, Attempt: attempt, Request: request, Outcome: outcome}
	}
	whole := []bus.AuditRecord{
		rec("session.started", "s", 0, "", ""), rec("request", "s", 0, "q1", ""), // killed: no end
		rec("session.started", "s", 1, "", ""), rec("request", "s", 1, "q1", ""), rec("answer", "s", 1, "q1", "answered"),
		rec("request", "s", 1, "q1", ""), rec("answer", "s", 1, "q1", "invalid"), // a duplicate id, answered invalid
		rec("session.ended", "s", 1, "", "ok"),
	}
	if v := violations(whole, []string{"s"}); len(v) != 0 {
		t.Fatalf("a whole history: %v", v)
	}
	for _, c := range []struct {
		name    string
		records []bus.AuditRecord
		want    string
	}{
		{"unanswered", []bus.AuditRecord{rec("session.started", "s", 0, "", ""), rec("request", "s", 0, "q1", ""), rec("session.ended", "s", 0, "", "ok")},
			"s#0: request q1 asked 1 times, answered 0 times"},
		{"answered twice", []bus.AuditRecord{rec("session.started", "s", 0, "", ""), rec("request", "s", 0, "q1", ""), rec("answer", "s", 0, "q1", ""), rec("answer", "s", 0, "q1", ""), rec("session.ended", "s", 0, "", "ok")},
			"answered 2 times"},
		{"never asked", []bus.AuditRecord{rec("session.started", "s", 0, "", ""), rec("answer", "s", 0, "q9", ""), rec("session.ended", "s", 0, "", "ok")},
			"1 answers to request q9, which it never asked"},
		{"ended twice", []bus.AuditRecord{rec("session.started", "s", 0, "", ""), rec("session.ended", "s", 0, "", "ok"), rec("session.ended", "s", 0, "", "ok")},
			"s#0: started 1 times, ended 2 times"},
		{"ended unstarted", []bus.AuditRecord{rec("session.ended", "s", 0, "", "ok")}, "ended only if started"},
		{"ok in two attempts", []bus.AuditRecord{rec("session.started", "s", 0, "", ""), rec("session.ended", "s", 0, "", "ok"), rec("session.started", "s", 1, "", ""), rec("session.ended", "s", 1, "", "ok")},
			"task s ended ok 2 times"},
		{"never ended", []bus.AuditRecord{rec("session.started", "s", 0, "", "")}, "task s ended ok 0 times"},
	} {
		v := violations(c.records, []string{"s"})
		if !slices.ContainsFunc(v, func(s string) bool { return strings.Contains(s, c.want) }) {
			t.Errorf("%s: violations %v; want one saying %q", c.name, v, c.want)
		}
	}
}
