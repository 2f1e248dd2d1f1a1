package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/wire"
)

// TestConsoleStandingAnswers: "Approve for w, 1 h" answers the same request in
// another session of the host at once (decided by host:human:ana); "Approve for
// session" stands in its session. Both are listed under Standing answers, and once
// revoked there, their requests are asked again; the audit records each answer's
// scope and each revocation with who revoked it.
func TestConsoleStandingAnswers(t *testing.T) {
	t.Parallel()
	manifest, ctx := consoleAsAna(t)
	const once = `{"steps":[{"send":{"type":"approval","id":"a1","description":"npm test"}},{"await":"a1"},{"result":"done"}]}`
	submit := func(id, script string) *proc {
		return runtimeProc(t, "submit", "-c", manifest, "--id", id, "--follow", "w", script)
	}
	finished := func(p *proc, id string) {
		t.Helper()
		if code := p.wait(t, 30*time.Second); code != exitOK {
			t.Fatalf("%s: exit %d\n%s", id, code, p.stderr)
		}
	}
	answers := func(session string) map[string]*wire.AuditRecord {
		t.Helper()
		records, err := readAudit(t, manifest, session)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*wire.AuditRecord{}
		for _, r := range records {
			if r.Kind == "answer" || r.Kind == wire.AuditGrantRevoked {
				out[r.Kind+":"+r.Request] = r
			}
		}
		return out
	}
	grantRows := func(want int) {
		t.Helper()
		get(t, ctx, fmt.Sprintf("%d standing answers", want), chromedp.Poll[bool](fmt.Sprintf(`document.querySelectorAll("#grants tbody tr").length === %d`, want),
			chromedp.WithPollingTimeout(25*time.Second)))
	}

	// For the host, an hour: the next session's same request is not asked.
	first := submit("t-g1", once)
	card := cardFor(t, ctx, "npm test")
	do(t, ctx, "approve for the host", chromedp.Click(chromedp.CSS(card+" button.approve-host")))
	finished(first, "t-g1")
	if a := answers("t-g1")["answer:a1"]; a == nil || a.Decider != "human:ana" || a.Scope != wire.ScopeHost || !strings.Contains(a.Reason, "for every session of host w") {
		t.Fatalf("t-g1's answer: %+v", a)
	}
	grantRows(1)
	if row := get(t, ctx, "the grant's row", chromedp.Evaluate[string](`document.querySelector("#grants tbody tr").textContent`)); !strings.Contains(row, "host w") ||
		!strings.Contains(row, "approval: npm test") || !strings.Contains(row, "human:ana") {
		t.Fatalf("the grant as listed: %q", row)
	}
	second := submit("t-g2", once)
	finished(second, "t-g2")
	if a := answers("t-g2")["answer:a1"]; a == nil || a.Decider != "host:human:ana" || !strings.Contains(a.Reason, "approved for every session of host w by human:ana") {
		t.Fatalf("t-g2's answer: %+v", a)
	}
	shot(t, ctx, "1-standing")

	// Revoked: the next one is asked again.
	do(t, ctx, "revoke it", chromedp.Click(chromedp.CSS("#grants tbody tr button.revoke")))
	grantRows(0)
	revoked := func(session string) *wire.AuditRecord {
		t.Helper()
		var r *wire.AuditRecord
		proctest.Within(t, 20*time.Second, func() error {
			if r = answers(session)[wire.AuditGrantRevoked+":a1"]; r == nil {
				return fmt.Errorf("no %s record in %s's audit within 20 s", wire.AuditGrantRevoked, session)
			}
			return nil
		})
		return r
	}
	if r := revoked("t-g1"); r.Decider != "human:ana" || r.Scope != wire.ScopeHost {
		t.Fatalf("the revocation's record: %+v", r)
	}
	third := submit("t-g3", once)
	card = waitingCard(t, ctx, "npm test")
	do(t, ctx, "deny the third", chromedp.Click(chromedp.CSS(card+" button.deny")), chromedp.SendKeys(chromedp.CSS(card+" input.reason"), "asked again\r"))
	finished(third, "t-g3")

	// For the session: the same request in it is answered, until the grant is revoked.
	own := submit("t-g4", `{"steps":[{"send":{"type":"approval","id":"a1","description":"npm run lint"}},{"await":"a1"},`+
		`{"send":{"type":"approval","id":"a2","description":"npm run lint"}},{"await":"a2"},`+
		`{"send":{"type":"question","id":"q1","question":"Go on?"}},{"await":"q1"},`+
		`{"send":{"type":"approval","id":"a3","description":"npm run lint"}},{"await":"a3"},{"result":"done"}]}`)
	card = cardFor(t, ctx, "npm run lint")
	do(t, ctx, "approve for the session", chromedp.Click(chromedp.CSS(card+" button.approve-session")))
	q := cardFor(t, ctx, "Go on?")
	grantRows(1)
	// From the command line this time: listed, then revoked.
	code, listed, stderr := runCLI("grants", "-c", manifest)
	id := get(t, ctx, "the grant's id", chromedp.Evaluate[string](`document.querySelector("#grants tbody tr").dataset.id`))
	if code != exitOK || !strings.Contains(listed, id) || !strings.Contains(listed, "session t-g4") || !strings.Contains(listed, "approval: npm run lint") {
		t.Fatalf("agentmux grants: exit %d\n%s%s", code, listed, stderr)
	}
	if code, out, stderr := runCLI("grants", "revoke", "-c", manifest, "--as", "ana", id); code != exitOK || !strings.Contains(out, "revoked "+id) {
		t.Fatalf("agentmux grants revoke: exit %d\n%s%s", code, out, stderr)
	}
	if code, _, stderr := runCLI("grants", "revoke", "-c", manifest, "--as", "ana", id); code != exitUsage || !strings.Contains(stderr, "no such grant") {
		t.Fatalf("a grant revoked twice: exit %d\n%s", code, stderr)
	}
	grantRows(0)
	do(t, ctx, "answer the question", chromedp.SendKeys(chromedp.CSS(q+" input.answer"), "yes\r"))
	card = waitingCard(t, ctx, "npm run lint")
	do(t, ctx, "deny the lint asked again", chromedp.Click(chromedp.CSS(card+" button.deny")), chromedp.SendKeys(chromedp.CSS(card+" input.reason"), "revoked\r"))
	finished(own, "t-g4")
	got := answers("t-g4")
	if got["answer:a1"].Scope != wire.ScopeSession || got["answer:a2"].Decider != "session:human:ana" || got["answer:a3"].Decider != "human:ana" ||
		string(got["answer:a3"].Value) != `"no"` || revoked("t-g4").Scope != wire.ScopeSession {
		for k, r := range got {
			t.Logf("%s: %+v", k, r)
		}
		t.Fatalf("t-g4: a1 for the session, a2 by it, the grant revoked, a3 asked again")
	}
}

// waitingCard waits for the card of a request still waiting whose text is text (the
// settled cards of the same text stay on the page a while).
func waitingCard(t *testing.T, ctx context.Context, text string) string {
	t.Helper()
	id := get(t, ctx, "a waiting card for "+text, chromedp.Poll[string](fmt.Sprintf(
		`(Array.from(document.querySelectorAll(".request:not(.settled)")).find(c => c.querySelector(".text").textContent === %q) || {dataset: {}}).dataset.id`, text),
		chromedp.WithPollingTimeout(25*time.Second)))
	return fmt.Sprintf(`.request[data-id=%q]`, id)
}
