package wire

import "testing"

func TestSubjects(t *testing.T) {
	for got, want := range map[string]string{
		EventSubject("w", "s1", "question"): "agentmux.evt.w.s1.question",
		SessionEvents("w", "s1"):            "agentmux.evt.w.s1.>",
		AskSubject("security"):              "agentmux.ask.security",
		TaskSubject("w"):                    "agentmux.task.w",
		AuditSubject("w", "s1"):             "agentmux.audit.w.s1",
		CtlSubject("n1", "list"):            "agentmux.ctl.n1.list",
		ToolSubject("sql"):                  "agentmux.tool.sql",
	} {
		if got != want {
			t.Errorf("%s; want %s", got, want)
		}
	}
}
