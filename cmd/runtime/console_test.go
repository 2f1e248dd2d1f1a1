package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/internal/testdeps"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// consoleManifest is a node whose every request goes to the person on call.
func consoleManifest(t *testing.T) (path string) {
	dir := t.TempDir()
	m := fmt.Sprintf(`[nats]
listen = "127.0.0.1:%d"
store_dir = %q
[metrics]
addr = "127.0.0.1:0"
[hosts.w]
command = %q
args = ["sim"]
env = { AGENTMUX_RUNTIME_MAIN = "1" }
question_timeout = "5m"
stop_grace = "2s"
pool = 2
[supervisors.oncall]
strategy = "human"
[[routes]]
supervisor = "oncall"
`, proctest.FreePort(t), filepath.Join(dir, "store"), os.Args[0])
	path = filepath.Join(dir, "agentmux.toml")
	if err := os.WriteFile(path, []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// consoleAsAna runs a node of consoleManifest and a console on loopback that answers as
// ana, and opens the console in Chromium through its sign-in link.
func consoleAsAna(t *testing.T) (manifest string, ctx context.Context) {
	t.Helper()
	manifest = consoleManifest(t)
	up := runtimeProc(t, "up", "-c", manifest)
	until(t, "agentmux up", up.stderr, "node up")
	con := runtimeProc(t, "console", "-c", manifest, "--addr", fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(t)), "--as", "ana")
	until(t, "agentmux console", con.stderr, "console up")
	ctx = browser(t)
	do(t, ctx, "open the console", chromedp.Navigate(signInLink(t, con.stderr.String())), chromedp.WaitVisible(chromedp.CSS("#status.live")))
	return manifest, ctx
}

// answeredBy is who decided each of a session's requests, by request id.
func answeredBy(t *testing.T, manifest, session string) map[string]string {
	t.Helper()
	records, err := readAudit(t, manifest, session)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range records {
		if r.Kind == "answer" {
			out[r.Request] = r.Decider
		}
	}
	return out
}

// browser is a headless Chromium (Debian's) driven over the DevTools protocol; it is
// stopped, with every process it started, when the test ends.
func browser(t *testing.T) context.Context {
	t.Helper()
	exe := testdeps.System(t, "chromium", "Debian's chromium")
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()), chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(1280, 1000),
		chromedp.Env("TMPDIR="+t.TempDir())) // its org.chromium.Chromium.* files go with the test's directory
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// tab opens another tab of the same browser.
func tab(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	tctx, cancel := chromedp.NewContext(ctx)
	t.Cleanup(cancel)
	if err := chromedp.Do(tctx); err != nil { // the first run opens the tab: without a timeout, which would close it
		t.Fatalf("open a tab: %v", err)
	}
	return tctx
}

// do runs browser steps within 30 s, failing the test with what was being done and
// the page as it was.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	get(t, ctx, what, chromedp.Steps(steps...))
}

// get runs one browser action within 30 s and returns its value.
func get[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(tctx, a)
	if err != nil {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		page, _ := chromedp.Run(dctx, chromedp.OuterHTML(chromedp.CSS("body")))
		t.Fatalf("%s: %v\npage:\n%s", what, err, page)
	}
	return v
}

// shot keeps a screenshot of the page as a test artifact (.ci/artifacts/console).
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := filepath.Join("..", "..", ".ci", "artifacts", "console")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	png := get(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(dir, t.Name()+"-"+name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// cardFor waits for the request card whose text is text and returns its selector.
func cardFor(t *testing.T, ctx context.Context, text string) string {
	t.Helper()
	id := get(t, ctx, "a card for "+text, chromedp.Poll[string](fmt.Sprintf(
		`(Array.from(document.querySelectorAll(".request")).find(c => c.querySelector(".text").textContent === %q) || {dataset: {}}).dataset.id`, text),
		chromedp.WithPollingTimeout(25*time.Second)))
	return fmt.Sprintf(`.request[data-id=%q]`, id)
}

// outcome waits until the card's outcome line contains want.
func outcome(t *testing.T, ctx context.Context, card, want string) {
	t.Helper()
	get(t, ctx, card+" says "+want, chromedp.Poll[bool](fmt.Sprintf(`((document.querySelector(%q + " .outcome") || {}).textContent || "").includes(%q)`, card, want),
		chromedp.WithPollingTimeout(25*time.Second)))
}

// press is a letter key pressed as a keyboard does it: one keyDown that carries its
// text, so a handler that prevents its default types nothing (chromedp.KeyEvent sends
// the text as a separate char event, which no handler can stop).
func press(letter rune) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		key, code := string(letter), "Key"+strings.ToUpper(string(letter))
		down := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyDown, Key: key, Code: code, Text: key,
			WindowsVirtualKeyCode: int64(unicode.ToUpper(letter))}
		if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, down); err != nil {
			return err
		}
		up := down
		up.Type, up.Text = input.DispatchKeyEventTypeKeyUp, ""
		_, err := cdp.Call(ctx, t, input.DispatchKeyEvent, up)
		return err
	})
}

// text is the text of the first element sel matches.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return get(t, ctx, "the text of "+sel, chromedp.Text(chromedp.CSS(sel)))
}

const consoleScript = `{"steps":[
 {"send":{"type":"approval","id":"a1","description":"deploy v2 to staging"}},
 {"send":{"type":"question","id":"q1","kind":"select","question":"Which suite?","options":["unit","e2e"]}},
 {"send":{"type":"question","id":"q2","question":"Which branch?"}},
 {"send":{"type":"approval","id":"a2","description":"rm -rf build"}},
 {"send":{"type":"checkpoint","state":{"asked":4}}},
 {"await":"*"},{"result":"done"}]}`

// TestConsoleInChromium: requests appear on the page without a reload; Approve, an
// option, a typed answer and a Deny with its reason (by keyboard) reach the agent,
// recorded as the person; an answer after the first is refused on the page, saying who
// answered; the session's page shows its trail and events.
func TestConsoleInChromium(t *testing.T) {
	t.Parallel()
	manifest := consoleManifest(t)
	up := runtimeProc(t, "up", "-c", manifest)
	until(t, "agentmux up", up.stderr, "node up")
	url := fmt.Sprintf("http://127.0.0.1:%d", proctest.FreePort(t))
	con := runtimeProc(t, "console", "-c", manifest, "--addr", strings.TrimPrefix(url, "http://"), "--as", "ana")
	until(t, "agentmux console", con.stderr, "console up")
	link := signInLink(t, con.stderr.String())
	if !strings.HasPrefix(link, url+"/login?token=") {
		t.Fatalf("the console's sign-in link %q", link)
	}
	// Without the link, a process of this machine (an agent, say) gets nothing.
	for _, req := range []struct{ method, path, body string }{
		{http.MethodGet, "/api/stream", ""}, {http.MethodPost, "/api/respond", `{"id":"h-any","value":"yes"}`},
		{http.MethodGet, "/login?token=0123456789abcdef0123456789abcdef", ""},
	} {
		r, _ := http.NewRequest(req.method, url+req.path, strings.NewReader(req.body))
		noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := noRedirect.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized && resp.Header.Get("Location") != "/login?error=token" {
			t.Errorf("%s %s without the console's link: %s (Location %q)", req.method, req.path, resp.Status, resp.Header.Get("Location"))
		}
	}

	resp, err := http.Get(url + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Fatalf("Content-Security-Policy %q", csp)
	}

	ctx := browser(t)
	do(t, ctx, "open the console's link", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS("#status.live")))
	shot(t, ctx, "1-empty")

	follow := runtimeProc(t, "submit", "-c", manifest, "--id", "t-console", "--follow", "w", consoleScript)
	a1, q1, q2, a2 := cardFor(t, ctx, "deploy v2 to staging"), cardFor(t, ctx, "Which suite?"), cardFor(t, ctx, "Which branch?"), cardFor(t, ctx, "rm -rf build")
	shot(t, ctx, "2-pending")
	if left := text(t, ctx, a1+" .countdown"); !strings.HasSuffix(left, "left") {
		t.Errorf("countdown %q", left)
	}

	// Each answer settles (its card leaves the list) before the next click, as a person
	// sees it: a click is a point on the page, and a card leaving moves the ones below.
	do(t, ctx, "approve a1", chromedp.Click(chromedp.CSS(a1+" button.approve")))
	outcome(t, ctx, a1, `answered "yes" by human:ana`)
	do(t, ctx, "choose e2e for q1", chromedp.Click(chromedp.CSS(q1+` button.option:nth-of-type(2)`)))
	outcome(t, ctx, q1, `answered "e2e" by human:ana`)
	do(t, ctx, "answer q2", chromedp.SendKeys(chromedp.CSS(q2+" input.answer"), "main"), chromedp.Click(chromedp.CSS(q2+" .actions button")))
	outcome(t, ctx, q2, `answered "main" by human:ana`)
	do(t, ctx, "deny a2 by keyboard", chromedp.Focus(chromedp.CSS(a2)), press('d'),
		chromedp.WaitVisible(chromedp.CSS(a2+" input.reason")), chromedp.SendKeys(chromedp.CSS(a2+" input.reason"), "not in this change\r"))
	outcome(t, ctx, a2, `answered "no" by human:ana (not in this change)`)
	shot(t, ctx, "3-answered")
	if code := follow.wait(t, 60*time.Second); code != exitOK {
		t.Fatalf("submit --follow: exit %d\n%s", code, follow.stderr)
	}
	var res struct {
		Answers map[string]struct{ Value json.RawMessage } `json:"answers"`
	}
	if err := json.Unmarshal([]byte(follow.stdout.String()), &res); err != nil {
		t.Fatalf("result %s: %v", follow.stdout, err)
	}
	for id, want := range map[string]string{"a1": `"yes"`, "q1": `"e2e"`, "q2": `"main"`, "a2": `"no"`} {
		if got := string(res.Answers[id].Value); got != want {
			t.Errorf("the agent got %s for %s; want %s", got, id, want)
		}
	}

	// A second answer: another page still showing the request (its update not yet
	// arrived) answers after the first; the console refuses it, saying who answered.
	other := tab(t, ctx)
	follow2 := runtimeProc(t, "submit", "-c", manifest, "--id", "t-console-2", "--follow", "w",
		`{"steps":[{"send":{"type":"approval","id":"a3","description":"deploy v3 to staging"}},{"await":"a3"},`+
			`{"send":{"type":"usage","model":"m","input_tokens":1200,"output_tokens":300,"cost_usd":0.0123}},{"result":"done"}]}`)
	do(t, other, "open the console in a second tab", chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#status.live")))
	a3 := cardFor(t, other, "deploy v3 to staging")
	cardFor(t, ctx, "deploy v3 to staging")
	stale := get(t, other, "keep the request as the second tab sees it",
		chromedp.Evaluate[string](`window.stale = state.pending.get(document.querySelector(".request:not(.settled)").dataset.id); window.stale.id`))
	do(t, ctx, "approve a3 in the first tab", chromedp.Click(chromedp.CSS(a3+" button.approve")))
	outcome(t, ctx, a3, `answered "yes" by human:ana`)
	get(t, other, "deny a3 in the second tab, after the first answer", chromedp.Evaluate[bool](`answer(window.stale, "no", "too late"); true`))
	outcome(t, other, a3, "refused: "+stale+": already answered by ana")
	shot(t, other, "4-second-answer-refused")
	if code := follow2.wait(t, 60*time.Second); code != exitOK || !strings.Contains(follow2.stdout.String(), `"a3":{"value":"yes"`) {
		t.Fatalf("the second task: exit %d, %s; want the first answer, yes", code, follow2.stdout)
	}
	// What its model calls cost, in the sessions table, model by model on hover.
	spent := get(t, ctx, "t-console-2's cost", chromedp.Poll[string](`(c => c && c.textContent ? c.textContent + " | " + c.title : false)(document.querySelector('#sessions tr[data-session="t-console-2"] td.cost'))`,
		chromedp.WithPollingTimeout(25*time.Second)))
	if spent != "$0.0123 | m: 1200 in, 300 out, $0.0123 (agent)" {
		t.Errorf("t-console-2's cost as shown: %q", spent)
	}

	// Answered, the cards wait no more: they are under the collapsed "Recently
	// settled", and nothing is counted as waiting.
	if n := text(t, ctx, "#pending-count"); n != "0" || get(t, ctx, "a1 settled", chromedp.Evaluate[bool](fmt.Sprintf(`!!document.querySelector('#settled-list %s')`, a1))) == false {
		t.Errorf("after every answer the count says %s, and a1 is not under Recently settled", n)
	}
	// The session's page: reached by clicking its id, and by search.
	do(t, ctx, "open the session from its settled card", chromedp.Click(chromedp.CSS("#settled summary")),
		chromedp.Click(chromedp.CSS(a1+` a[href="#/session/t-console"]`)), chromedp.WaitVisible(chromedp.CSS("#session")))
	get(t, ctx, "the trail lists the four answers", chromedp.Poll[bool](`document.querySelectorAll('#trail tr[data-kind="answer"]').length === 4`))
	trail := text(t, ctx, "#trail")
	for _, want := range []string{"deploy v2 to staging", "human:ana", "session.ended", "Which branch?", " UTC"} {
		if !strings.Contains(trail, want) {
			t.Errorf("the trail does not show %q:\n%s", want, trail)
		}
	}
	// Its checkpoint: where it could be brought back from, never what it holds.
	get(t, ctx, "the session's checkpoint", chromedp.Poll[bool](`document.querySelectorAll('#checkpoints tbody tr').length === 1`, chromedp.WithPollingTimeout(25*time.Second)))
	if row := text(t, ctx, "#checkpoints tbody tr"); !strings.Contains(row, "agent") || !strings.Contains(row, "place, state") || strings.Contains(row, "asked") {
		t.Errorf("the checkpoint's row: %q; want seq 1, taken at the agent's line, holding its place and state (not shown)", row)
	}
	// Its result, rendered: how it ended, its text, its other fields as a table.
	get(t, ctx, "the session's result", chromedp.Poll[bool](`!document.getElementById("result-section").hidden`, chromedp.WithPollingTimeout(25*time.Second)))
	if how, said := text(t, ctx, "#result-outcome"), text(t, ctx, "#result .result-text"); !strings.HasPrefix(how, "ok") || said != "done" {
		t.Errorf("the result shows %q, %q; want ok and its text, done", how, said)
	}
	if fields := text(t, ctx, "#result table.result-fields"); !strings.Contains(fields, "answers") {
		t.Errorf("the result's fields: %q; want its answers listed", fields)
	}
	shot(t, ctx, "5-session")
	do(t, ctx, "search for the second session", chromedp.Navigate(url+"/#/"), chromedp.WaitVisible(chromedp.CSS("#home")),
		chromedp.SendKeys(chromedp.CSS("#search"), "t-console-2\r"), chromedp.WaitVisible(chromedp.CSS("#session")))
	if id := text(t, ctx, "#session-id"); id != "t-console-2" {
		t.Fatalf("search opened %q", id)
	}
	// The audit searched across sessions: the approvals people decided, each linking
	// to its session (a3 of t-console-2 too).
	do(t, ctx, "search the audit for people's approvals", chromedp.Navigate(url+"/#/"), chromedp.WaitVisible(chromedp.CSS("#home")),
		chromedp.SendKeys(chromedp.CSS(`#audit-search [name="decider"]`), "human"),
		chromedp.SetValue(chromedp.CSS(`#audit-search [name="type"]`), "approval"),
		chromedp.SetValue(chromedp.CSS(`#audit-search [name="kind"]`), "answer"),
		chromedp.Click(chromedp.CSS(`#audit-search button`)), chromedp.WaitVisible(chromedp.CSS("#audit-results")))
	found := get(t, ctx, "the search's rows", chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll("#audit-results tbody tr")).map(r => r.querySelector("td.session a").getAttribute("href") + " " + r.textContent)`))
	if len(found) != 3 || !strings.Contains(text(t, ctx, "#audit-status"), "3 records") {
		t.Fatalf("the search found %d rows (%s); want a1, a2 and a3:\n%s", len(found), text(t, ctx, "#audit-status"), strings.Join(found, "\n"))
	}
	for i, want := range []string{`#/session/t-console `, `#/session/t-console `, `#/session/t-console-2 `} {
		if !strings.HasPrefix(found[i], want) || !strings.Contains(found[i], "human:ana") {
			t.Errorf("search row %d: %q; want %s…human:ana", i, found[i], want)
		}
	}
	shot(t, ctx, "6-audit-search")
	do(t, ctx, "a search the console cannot read", chromedp.SetValue(chromedp.CSS(`#audit-search [name="since"]`), "yesterday"),
		chromedp.Click(chromedp.CSS(`#audit-search button`)))
	get(t, ctx, "the search's error", chromedp.Poll[bool](`document.getElementById("audit-status").textContent.includes('"yesterday": want a duration')`))
	records, err := readAudit(t, manifest, "t-console")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range records {
		if r.Kind == "answer" && (r.Decider != "human:ana" || r.Request == "a2" && r.Reason != "ana: not in this change") {
			t.Errorf("answer %s decided by %s (%s); want human:ana, and the deny's reason", r.Request, r.Decider, r.Reason)
		}
	}
}

// readAudit reads a session's audit through the node's NATS.
func readAudit(t *testing.T, manifest, session string) ([]*wire.AuditRecord, error) {
	t.Helper()
	f, err := manifestFleet(manifest, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	c, err := dialFleet("test", f, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return store.ReadAudit(ctx, c.js, session)
}

// TestConsoleSignIn: bound beyond loopback the console refuses to start without a
// token; with one, a page asks for the token and a name, refuses a wrong token, and the
// name is who the answers are recorded as.
func TestConsoleSignIn(t *testing.T) {
	t.Parallel()
	manifest := consoleManifest(t)
	up := runtimeProc(t, "up", "-c", manifest)
	until(t, "agentmux up", up.stderr, "node up")
	port := proctest.FreePort(t)
	open := runtimeProc(t, "console", "-c", manifest, "--addr", fmt.Sprintf("0.0.0.0:%d", port))
	if code := open.wait(t, 20*time.Second); code != exitError || !strings.Contains(open.stderr.String(), "set AGENTMUX_CONSOLE_TOKEN") {
		t.Fatalf("a console beyond loopback without a token: exit %d\n%s", code, open.stderr)
	}
	weak := exec.Command(os.Args[0], "console", "-c", manifest, "--addr", fmt.Sprintf("0.0.0.0:%d", port))
	weak.Env = []string{"AGENTMUX_CONSOLE_TOKEN=s3cret-token"}
	if p := startProc(t, weak); p.wait(t, 20*time.Second) != exitError || !strings.Contains(p.stderr.String(), "bits, and a token needs 128") {
		t.Fatalf("a console with a weak token: exit %d\n%s", p.code, p.stderr)
	}
	cmd := exec.Command(os.Args[0], "console", "-c", manifest, "--addr", fmt.Sprintf("0.0.0.0:%d", port))
	cmd.Env = []string{"AGENTMUX_CONSOLE_TOKEN=" + consoleToken}
	con := startProc(t, cmd)
	until(t, "agentmux console", con.stderr, "console up")
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	rebinding(t, url, port)
	for _, path := range []string{"/api/stream", "/api/sessions/x"} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without a sign-in: %s", path, resp.Status)
		}
	}

	ctx := browser(t)
	do(t, ctx, "open the console: the sign-in page", chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)))
	do(t, ctx, "sign in with a wrong token", chromedp.SendKeys(chromedp.CSS(`input[name="name"]`), "bo"),
		chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), "guess\r"), chromedp.WaitVisible(chromedp.CSS(".error")))
	if msg := text(t, ctx, ".error"); !strings.Contains(msg, "not the console's") {
		t.Fatalf("wrong token says %q", msg)
	}
	shot(t, ctx, "1-refused")
	do(t, ctx, "sign in", chromedp.SendKeys(chromedp.CSS(`input[name="name"]`), "bo"),
		chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), consoleToken+"\r"), chromedp.WaitVisible(chromedp.CSS("#status.live")))
	if me := text(t, ctx, "#me"); me != "answering as human:bo" {
		t.Fatalf("signed in as %q", me)
	}
	follow := runtimeProc(t, "submit", "-c", manifest, "--id", "t-signed", "--follow", "w",
		`{"steps":[{"send":{"type":"approval","id":"a1","description":"ship it"}},{"await":"a1"},{"result":"done"}]}`)
	card := cardFor(t, ctx, "ship it")
	do(t, ctx, "approve by keyboard", chromedp.Focus(chromedp.CSS(card)), press('a'))
	outcome(t, ctx, card, `answered "yes" by human:bo`)
	shot(t, ctx, "2-answered")
	if code := follow.wait(t, 30*time.Second); code != exitOK {
		t.Fatalf("submit --follow: exit %d\n%s", code, follow.stderr)
	}
	records, err := readAudit(t, manifest, "t-signed")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range records {
		if r.Kind == "answer" && r.Decider != "human:bo" {
			t.Errorf("answer decided by %s; want human:bo", r.Decider)
		}
	}

	// Approve for the session: the same request later in the session is answered at
	// once, and never waits for a person.
	follow = runtimeProc(t, "submit", "-c", manifest, "--id", "t-standing", "--follow", "w",
		`{"steps":[{"send":{"type":"approval","id":"a1","description":"npm test"}},{"await":"a1"},{"send":{"type":"approval","id":"a2","description":"npm test"}},{"await":"a2"},{"result":"done"}]}`)
	card = cardFor(t, ctx, "npm test")
	do(t, ctx, "approve for the session", chromedp.Click(chromedp.CSS(card+" button.approve-session")))
	outcome(t, ctx, card, `answered "yes" by human:bo for the rest of the session`)
	if code := follow.wait(t, 30*time.Second); code != exitOK || !strings.Contains(follow.stdout.String(), `"a2":{"value":"yes"`) {
		t.Fatalf("submit --follow: exit %d\n%s", code, follow.stdout)
	}
	if d := answeredBy(t, manifest, "t-standing"); d["a1"] != "human:bo" || d["a2"] != "session:human:bo" {
		t.Fatalf("deciders %v; want a1 by human:bo and a2 by session:human:bo", d)
	}
	if n := get(t, ctx, "count the cards for npm test", chromedp.Evaluate[int](`Array.from(document.querySelectorAll(".request .text")).filter(e => e.textContent === "npm test").length`)); n != 1 {
		t.Fatalf("%d cards for npm test; the second request must not wait for a person", n)
	}
	shot(t, ctx, "3-approved-for-session")
	// Last: the throttle holds up this address's wrong sign-ins for a while; the right
	// token still signs a person in from the same address (on loopback, every process's).
	throttled(t, url)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, name := range []string{"bo", "mallory"} {
		resp, err := noRedirect.Post(url+"/login", "application/x-www-form-urlencoded", strings.NewReader("name="+name+"&token="+consoleToken))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Header.Get("Location") != "/" || len(resp.Cookies()) == 0 {
			t.Errorf("%s with the right token after the throttle: %s %q; want signed in", name, resp.Status, resp.Header.Get("Location"))
		}
	}
}

// TestSecureConsole: on a bus with users, a console connected as a console-role user
// answers in the name of the person who signed in; one connected as a viewer cannot
// answer at all, and says the bus refused it.
func TestSecureConsole(t *testing.T) {
	t.Parallel()
	s := startSecureNode(t)
	follow := startProc(t, withUser(s, "ops", exec.Command(os.Args[0], "submit", "-c", s.manifest, "--id", "t-desk", "--follow", "w",
		`{"steps":[{"send":{"type":"approval","id":"a1","description":"let a person decide"}},{"await":"a1"},{"result":"done"}]}`)))
	consoleAs := func(user string) string {
		port := proctest.FreePort(t)
		cmd := withUser(s, user, exec.Command(os.Args[0], "console", "-c", s.manifest, "--addr", fmt.Sprintf("127.0.0.1:%d", port)))
		cmd.Env = append(cmd.Env, "AGENTMUX_CONSOLE_TOKEN="+consoleToken+user)
		p := startProc(t, cmd)
		until(t, "console as "+user, p.stderr, "console up")
		return fmt.Sprintf("http://127.0.0.1:%d", port)
	}
	desk, view := consoleAs("desk"), consoleAs("view")
	var id string
	proctest.EventuallyWithin(t, 20*time.Second, "the request waiting for a person", func() bool {
		code, out, _ := s.cli(t, "view", "pending", "-c", s.manifest, "--json")
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var p struct{ ID, Session string }
			if code == exitOK && json.Unmarshal([]byte(line), &p) == nil && p.Session == "t-desk" {
				id = p.ID
			}
		}
		return id != ""
	})
	answer := func(base, name, token string) map[string]any {
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar}
		resp, err := c.PostForm(base+"/login", url.Values{"name": {name}, "token": {token}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		req, _ := http.NewRequest(http.MethodPost, base+"/api/respond", strings.NewReader(`{"id":"`+id+`","value":"yes"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", base)
		resp, err = c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var reply map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&reply)
		return reply
	}
	if reply := answer(view, "mallory", consoleToken+"view"); reply["ok"] == true || !strings.Contains(fmt.Sprint(reply["error"]), `may not publish to "agentmux.respond.mallory.`) {
		t.Fatalf("a console connected as a viewer answered: %v", reply)
	}
	if reply := answer(desk, "carol", consoleToken+"desk"); reply["ok"] != true {
		t.Fatalf("the console answered: %v", reply)
	}
	if code := follow.wait(t, 30*time.Second); code != exitOK {
		t.Fatalf("submit --follow: exit %d\n%s", code, follow.stderr)
	}
	code, out, _ := s.cli(t, "ops", "audit", "-c", s.manifest, "t-desk", "--json")
	if code != exitOK || !strings.Contains(out, `"decider":"human:carol"`) {
		t.Fatalf("audit: exit %d\n%s", code, out)
	}
}

// withUser gives cmd the client identity of one of the secure node's users.
func withUser(s *secureNode, user string, cmd *exec.Cmd) *exec.Cmd {
	cmd.Env = []string{"AGENTMUX_NATS_USER=" + user, "AGENTMUX_NATS_PASSWORD=" + s.passwords[user]}
	return cmd
}

// consoleToken is a sign-in token of 128 bits or more (32 hex digits and more).
const consoleToken = "5f0c9a7e13b24d6886e1f2a3c4b5d6e7-"

// rebinding plays a page on evil.example whose name now points at 127.0.0.1 (DNS
// rebinding): the browser sends Host and Origin evil.example, and the console answers
// neither a read of its stream nor an answer.
func rebinding(t *testing.T, base string, port int) {
	t.Helper()
	evil := fmt.Sprintf("evil.example:%d", port)
	for _, req := range []struct{ method, path, body string }{
		{http.MethodGet, "/api/stream", ""},
		{http.MethodGet, "/", ""},
		{http.MethodPost, "/api/respond", `{"id":"h-any","value":"yes"}`},
		{http.MethodPost, "/api/policy/shadow/optimist/promote", `{}`},
		{http.MethodPost, "/login", "name=bob&token=" + consoleToken},
	} {
		r, _ := http.NewRequest(req.method, base+req.path, strings.NewReader(req.body))
		r.Host = evil
		r.Header.Set("Origin", "http://"+evil)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusMisdirectedRequest || !strings.Contains(string(body), "does not answer to") {
			t.Errorf("%s %s for %s: %s %s; want it refused", req.method, req.path, evil, resp.Status, body)
		}
	}
}

// throttled tries wrong tokens until the console makes the address wait.
func throttled(t *testing.T, base string) {
	t.Helper()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for i := 0; ; i++ {
		resp, err := noRedirect.PostForm(base+"/login", url.Values{"name": {"mallory"}, "token": {fmt.Sprintf("guess-%d", i)}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		where := resp.Header.Get("Location")
		if where == "/login?error=throttled" {
			if resp.Header.Get("Retry-After") == "" || i < 3 {
				t.Fatalf("throttled after %d tries, Retry-After %q", i, resp.Header.Get("Retry-After"))
			}
			return
		}
		if where != "/login?error=token" || i > 10 {
			t.Fatalf("wrong token %d: %s %q", i, resp.Status, where)
		}
	}
}

// signInLink is the link a console without a token kept: its log (a pipe here, not a
// terminal) names the file in the state directory, and holds no token itself.
func signInLink(t *testing.T, log string) string {
	t.Helper()
	m := regexp.MustCompile(`"console up" url=\S+ sign_in_link_in=("[^"]+"|\S+)`).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no console up … sign_in_link_in= in:\n%s", log)
	}
	if strings.Contains(log, "token=") {
		t.Fatalf("the console's log holds its token:\n%s", log)
	}
	path := strings.Trim(m[1], `"`)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the sign-in link's file %s: %v, %v; want it readable by its user alone", path, fi, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// TestConsoleOutlivesANodeRestart: a console left open shows the requests of a node
// restarted under it, on the same page, without a reload: its bus connection comes
// back, and with it what it follows.
func TestConsoleOutlivesANodeRestart(t *testing.T) {
	t.Parallel()
	manifest := consoleManifest(t)
	up := runtimeProc(t, "up", "-c", manifest)
	until(t, "agentmux up", up.stderr, "node up")
	url := fmt.Sprintf("http://127.0.0.1:%d", proctest.FreePort(t))
	con := runtimeProc(t, "console", "-c", manifest, "--addr", strings.TrimPrefix(url, "http://"), "--as", "ana")
	until(t, "agentmux console", con.stderr, "console up")
	ctx := browser(t)
	do(t, ctx, "open the console's link", chromedp.Navigate(signInLink(t, con.stderr.String())), chromedp.WaitVisible(chromedp.CSS("#status.live")))

	ask := func(id, what string) {
		t.Helper()
		script := `{"steps":[{"send":{"type":"approval","id":"a1","description":"` + what + `"}},{"await":"a1"},{"result":"done"}]}`
		submit := runtimeProc(t, "submit", "-c", manifest, "--id", id, "w", script)
		if code := submit.wait(t, 30*time.Second); code != exitOK {
			t.Fatalf("submit %s: exit %d\n%s", id, code, submit.stderr)
		}
	}
	ask("t-before", "deploy v1")
	cardFor(t, ctx, "deploy v1")

	if err := up.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	up.wait(t, 10*time.Second)
	again := runtimeProc(t, "up", "-c", manifest)
	until(t, "agentmux up again", again.stderr, "node up")
	// t-before runs again on the restarted node (its next attempt asks deploy v1 again,
	// and waits); the host's pool of 2 runs t-after beside it.
	ask("t-after", "deploy v2")
	card := cardFor(t, ctx, "deploy v2")
	do(t, ctx, "approve the request asked after the restart", chromedp.Click(chromedp.CSS(card+" button.approve")))
	outcome(t, ctx, card, "answered")
	proctest.Eventually(t, "the approval given after the restart in the audit", func() bool {
		audit := runtimeProc(t, "audit", "-c", manifest, "t-after")
		audit.wait(t, 10*time.Second)
		return strings.Contains(audit.stdout.String(), `"yes" answered by human:ana`)
	})
	// The page of a session that has ended, opened afresh, shows the events the history
	// kept: none of them happens while it is open.
	do(t, ctx, "open the ended session's page", chromedp.Navigate(url+"/#/session/t-after"),
		chromedp.WaitVisible(chromedp.CSS(`#events li[data-type="session.ended"]`)))
	for _, typ := range []string{"session.started", "approval", "request.answered"} {
		if n := get(t, ctx, "events of "+typ, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll('#events li[data-type=%q]').length`, typ))); n != 1 {
			t.Errorf("the ended session's page shows %d %s events; want 1", n, typ)
		}
	}
}
