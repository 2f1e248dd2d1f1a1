package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestConsoleBulkAnswers: a person filters the requests waiting (by tool, session,
// risk), selects the approvals shown and answers them at once; each is answered on
// its own (an answer record per request, decided by that person), a deny's reason
// reaches each agent, and what the filter hides is left alone.
func TestConsoleBulkAnswers(t *testing.T) {
	t.Parallel()
	manifest, ctx := consoleAsAna(t)

	approval := func(id, tool, command, risk string) string {
		r := ""
		if risk != "" {
			r = fmt.Sprintf(`,"risk_level":%q`, risk)
		}
		return fmt.Sprintf(`{"send":{"type":"approval","id":%q,"description":%q,"tool":%q,"input":{"command":%q}%s}}`, id, command, tool, command, r)
	}
	one := runtimeProc(t, "submit", "-c", manifest, "--id", "t-bulk-one", "--follow", "w", `{"steps":[`+
		approval("a1", "Bash", "npm test", "")+","+approval("a2", "Bash", "npm run lint", "")+","+approval("a3", "Read", "cat README.md", "")+
		`,{"await":"*"},{"result":"done"}]}`)
	two := runtimeProc(t, "submit", "-c", manifest, "--id", "t-bulk-two", "--follow", "w", `{"steps":[`+
		approval("b1", "Bash", "rm -rf node_modules", "high")+","+approval("b2", "Bash", "git push --force", "high")+
		`,{"await":"*"},{"result":"done"}]}`)
	for _, text := range []string{"npm test", "npm run lint", "cat README.md", "rm -rf node_modules", "git push --force"} {
		cardFor(t, ctx, text)
	}
	visibleTexts := func() string {
		return strings.Join(get(t, ctx, "the cards shown", chromedp.Evaluate[[]string](
			`Array.from(document.querySelectorAll("#pending .request:not([hidden]) .text")).map(e => e.textContent).sort()`)), "|")
	}

	// The bulk bar comes with a selection; the filters are one tap away.
	if hidden := get(t, ctx, "the bulk bar", chromedp.Evaluate[bool](`document.getElementById("bulk").hidden`)); !hidden {
		t.Error("the bulk bar shows before anything is selected")
	}
	do(t, ctx, "open the filters", chromedp.Click(chromedp.CSS("#filters summary")))
	// The risky ones first: by risk.
	do(t, ctx, "filter by risk high", chromedp.SetValue(chromedp.CSS(`#filter select[name="risk"]`), "high"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#filter select[name="risk"]').dispatchEvent(new Event("input", {bubbles: true}))`))
	if got := visibleTexts(); got != "git push --force|rm -rf node_modules" {
		t.Fatalf("risk high shows %q", got)
	}
	if n := text(t, ctx, "#pending-count"); n != "2" {
		t.Errorf("the count says %s with 2 requests shown", n)
	}
	do(t, ctx, "select them, and deny with a reason", chromedp.Click(chromedp.CSS("#select-shown")),
		chromedp.SendKeys(chromedp.CSS("#bulk-reason"), "not on a Friday"), chromedp.Click(chromedp.CSS("#bulk-deny")))
	get(t, ctx, "the bulk outcome", chromedp.Poll[bool](`document.getElementById("bulk-outcome").textContent.startsWith('answered 2 of 2 "no" as human:ana')`,
		chromedp.WithPollingTimeout(25*time.Second)))
	// Settled, they leave the requests waiting for the collapsed "Recently settled".
	get(t, ctx, "the denied ones recently settled", chromedp.Poll[bool](`(() => {
		const settled = Array.from(document.querySelectorAll("#settled-list .request .text")).map(e => e.textContent).sort().join("|");
		const waiting = Array.from(document.querySelectorAll("#pending .request .text")).map(e => e.textContent);
		return settled === "git push --force|rm -rf node_modules" && !waiting.includes("git push --force") && !document.getElementById("settled").open;
	})()`, chromedp.WithPollingTimeout(25*time.Second)))
	shot(t, ctx, "1-denied-the-risky")

	// Then the Bash ones of the first session: by tool and session; Read stays.
	do(t, ctx, "filter by Bash in t-bulk-one", chromedp.SetValue(chromedp.CSS(`#filter select[name="risk"]`), ""),
		chromedp.SetValue(chromedp.CSS(`#filter select[name="tool"]`), "Bash"),
		chromedp.SendKeys(chromedp.CSS(`#filter input[name="session"]`), "t-bulk-one"))
	if got := visibleTexts(); got != "npm run lint|npm test" {
		t.Fatalf("Bash in t-bulk-one shows %q", got)
	}
	do(t, ctx, "select them, and approve", chromedp.Click(chromedp.CSS("#select-shown")), chromedp.Click(chromedp.CSS("#bulk-approve")))
	get(t, ctx, "the bulk outcome", chromedp.Poll[bool](`document.getElementById("bulk-outcome").textContent.startsWith('answered 2 of 2 "yes" as human:ana')`,
		chromedp.WithPollingTimeout(25*time.Second)))
	card := cardFor(t, ctx, "cat README.md")
	do(t, ctx, "approve the Read on its own", chromedp.SetValue(chromedp.CSS(`#filter select[name="tool"]`), ""),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#filter select[name="tool"]').dispatchEvent(new Event("input", {bubbles: true}))`),
		chromedp.Click(chromedp.CSS(card+" button.approve")))

	for _, f := range []struct {
		p       *proc
		session string
		want    map[string]string
	}{
		{one, "t-bulk-one", map[string]string{"a1": "yes", "a2": "yes", "a3": "yes"}},
		{two, "t-bulk-two", map[string]string{"b1": "no", "b2": "no"}},
	} {
		if code := f.p.wait(t, 30*time.Second); code != exitOK {
			t.Fatalf("%s: exit %d\n%s", f.session, code, f.p.stderr)
		}
		records, err := readAudit(t, manifest, f.session)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, r := range records {
			if r.Kind != "answer" {
				continue
			}
			if _, twice := got[r.Request]; twice {
				t.Errorf("%s answered twice", r.Request)
			}
			got[r.Request] = strings.Trim(string(r.Value), `"`)
			if r.Decider != "human:ana" {
				t.Errorf("%s decided by %s", r.Request, r.Decider)
			}
			if got[r.Request] == "no" && !strings.Contains(r.Reason, "not on a Friday") {
				t.Errorf("%s denied without its reason: %q", r.Request, r.Reason)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(f.want) {
			t.Errorf("%s: answers %v, want %v", f.session, got, f.want)
		}
	}
}
