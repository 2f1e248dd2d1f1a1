package wire

import "testing"

func TestSubjects(t *testing.T) {
	for got, want := range map[string]string{
		EventSubject("w", "s1", "question"): "agentmux.evt.w.s1.question",
		SessionEvents("w", "s1"):            "agentmux.evt.w.s1.>",
		AskSubject("security"):              "agentmux.ask.security",
		TaskSubject("w"):                    "agentmux.task.w",
		TaskSubjectBy("w", "alice"):         "agentmux.task.w.alice",
		TaskSubjectBy("w", "a.b"):           "agentmux.task.w",
		AuditSubject("w", "s1"):             "agentmux.audit.w.s1",
		CtlSubject("n1", "list"):            "agentmux.ctl.n1.list",
		ToolSubject("sql"):                  "agentmux.tool.sql",
	} {
		if got != want {
			t.Errorf("%s; want %s", got, want)
		}
	}
}

// TestRulesChangeSubject: the person a change names reads back from its subject, an
// email's dots too, and a subject that names no person is not a change.
func TestRulesChangeSubject(t *testing.T) {
	s := RulesChangeSubject("policy", "ana.b@example.com")
	if s != "agentmux.rules.policy.ana%2Eb@example%2Ecom" {
		t.Fatalf("RulesChangeSubject = %s", s)
	}
	if sup, who, ok := ParseRulesChangeSubject(s); !ok || sup != "policy" || who != "ana.b@example.com" {
		t.Fatalf("ParseRulesChangeSubject(%s) = %q, %q, %v", s, sup, who, ok)
	}
	for _, bad := range []string{"agentmux.rules", "agentmux.rules.policy", "agentmux.rules.policy.", "agentmux.respond.ana.h-1", "agentmux.rules.policy.a b"} {
		if _, _, ok := ParseRulesChangeSubject(bad); ok {
			t.Errorf("ParseRulesChangeSubject(%q) is ok; want refused", bad)
		}
	}
}

func TestBudgetRaiseSubject(t *testing.T) {
	s := BudgetRaiseSubject("coder", "ana.b@example.com")
	if s != "agentmux.budget.raise.coder.ana%2Eb@example%2Ecom" {
		t.Fatalf("BudgetRaiseSubject = %s", s)
	}
	if host, who, ok := ParseBudgetRaiseSubject(s); !ok || host != "coder" || who != "ana.b@example.com" {
		t.Fatalf("ParseBudgetRaiseSubject(%s) = %q, %q, %v", s, host, who, ok)
	}
	for _, bad := range []string{"agentmux.budget.raise", "agentmux.budget.raise.coder", "agentmux.budget.raise.co*der.ana", "agentmux.rules.coder.ana"} {
		if _, _, ok := ParseBudgetRaiseSubject(bad); ok {
			t.Errorf("ParseBudgetRaiseSubject(%q) is ok; want refused", bad)
		}
	}
}
