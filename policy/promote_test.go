package policy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/wire"
)

// shadowRecord is a shadow record as an agent writes it: the shadow's answer, and the
// one given and by whom.
func shadowRecord(decider, value, given, givenBy string) *wire.AuditRecord {
	r := &wire.AuditRecord{Kind: "shadow", Type: "approval", Decider: decider, Outcome: "no_answer"}
	if value != "" {
		r.Value, r.Outcome = json.RawMessage(value), "disagreed"
		if value == given {
			r.Outcome = "agreed"
		}
	}
	if given != "" {
		r.Given, r.GivenBy = json.RawMessage(given), givenBy
	}
	return r
}

// TestPromotionBar: a shadow's tally counts the approvals it would have allowed that
// were denied, and by a person; the bar refuses a shadow that would allow what a
// person denied, one with too few answers, too little agreement or too many requests
// left unanswered, and passes one that clears all four.
func TestPromotionBar(t *testing.T) {
	records := func(agreed, disagreed, none int, extra ...*wire.AuditRecord) []*wire.AuditRecord {
		var out []*wire.AuditRecord
		for range agreed {
			out = append(out, shadowRecord("llm:reviewer/m", `"yes"`, `"yes"`, "rule:ops"))
		}
		for range disagreed {
			out = append(out, shadowRecord("llm:reviewer/m", `"no"`, `"yes"`, "rule:ops"))
		}
		for range none {
			out = append(out, shadowRecord("reviewer", "", `"yes"`, "rule:ops"))
		}
		return append(out, extra...)
	}
	tally := func(rs []*wire.AuditRecord) ShadowTally {
		t.Helper()
		tallies, _ := Shadows(rs)
		if len(tallies) != 1 || tallies[0].Supervisor != "reviewer" {
			t.Fatalf("tallies %+v; want reviewer's alone", tallies)
		}
		return tallies[0]
	}
	bar := Bar{MinAgreement: DefaultMinAgreement, MinDecided: DefaultMinDecided}

	clears := tally(records(96, 2, 2, shadowRecord("llm:reviewer/m", `"yes"`, `"no"`, "rule:ops")))
	if clears.Decided != 101 || clears.Agreed != 96 || clears.Disagreed != 3 || clears.NoAnswer != 2 || clears.AllowsDenied != 1 || clears.PersonDenied != 0 {
		t.Errorf("the tally: %+v", clears)
	}
	if err := bar.Check(clears); err != nil {
		t.Errorf("a shadow agreeing %.3f of 99 answers, allowing only what a rule denied: %v", clears.Agreement, err)
	}
	for _, c := range []struct {
		name string
		t    ShadowTally
		want string
	}{
		{"allows what a person denied", tally(records(200, 0, 0, shadowRecord("llm:reviewer/m", `"yes"`, `"no"`, "session:human:ana"))),
			"reviewer would have allowed 1 approvals a person denied"},
		{"too few answers", tally(records(49, 0, 0)), "reviewer answered 49 requests, under the 50 a promotion needs"},
		{"too little agreement", tally(records(94, 6, 0)), "reviewer agreed on 94.0% of 100 answers, under the 95.0% a promotion needs"},
		{"too many unanswered", tally(records(100, 0, 6)), "reviewer gave no answer to 6 of the 106 requests it shadowed"},
	} {
		err := bar.Check(c.t)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
	}
}
