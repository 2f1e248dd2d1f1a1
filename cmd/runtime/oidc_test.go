package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/agentmux/agentmux/internal/agenttest"
	"github.com/agentmux/agentmux/internal/proctest"
)

const oidcSecret = "c1ient-s3cr3t-8Hq2vN5kW0zR3tY7pL1xC4mB6jD9sF2g"

// TestConsoleSignInWithOpenID: a console beyond loopback signs people in with a real
// OpenID provider (authorization code with PKCE) in Chromium. An operator's answer is
// recorded under the name the provider vouched for; a viewer sees the request and
// cannot answer it, from the page or the API; someone in no allowed group is turned
// away; the shared token no longer signs anyone in.
func TestConsoleSignInWithOpenID(t *testing.T) {
	t.Parallel()
	manifest := consoleManifest(t)
	port := proctest.FreePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	issuer := agenttest.OpenIDProvider(t, []agenttest.OIDCClient{{ID: "agentmux", Secret: oidcSecret, RedirectURI: []string{base + "/oidc/callback"}}},
		map[string][]string{"alice@example.com": {"sre", "eng"}, "bob@example.com": {"eng"}, "mallory@example.com": {"contractors"}})
	appendManifest(t, manifest, fmt.Sprintf(`[console.oidc]
issuer = %q
client_id = "agentmux"
client_secret_env = "AGENTMUX_OIDC_SECRET"
scopes = ["email", "groups"]
allowed_groups = ["eng"]
operator_groups = ["sre"]
`, issuer))
	up := runtimeProc(t, "up", "-c", manifest)
	until(t, "agentmux up", up.stderr, "node up")

	both := exec.Command(os.Args[0], "console", "-c", manifest, "--addr", fmt.Sprintf("0.0.0.0:%d", port))
	both.Env = []string{"AGENTMUX_OIDC_SECRET=" + oidcSecret, "AGENTMUX_CONSOLE_TOKEN=" + consoleToken}
	if p := startProc(t, both); p.wait(t, 20*time.Second) != exitError || !strings.Contains(p.stderr.String(), "unset AGENTMUX_CONSOLE_TOKEN") {
		t.Fatalf("a console with the identity provider and a shared token: exit %d\n%s", p.code, p.stderr)
	}
	cmd := exec.Command(os.Args[0], "console", "-c", manifest, "--addr", fmt.Sprintf("0.0.0.0:%d", port))
	cmd.Env = []string{"AGENTMUX_OIDC_SECRET=" + oidcSecret}
	con := startProc(t, cmd)
	until(t, "agentmux console", con.stderr, "console up")

	ctx := browser(t)
	signIn := func(login string) {
		t.Helper()
		do(t, ctx, "forget who was signed in", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, network.ClearBrowserCookies, cdp.Empty{})
			return err
		}))
		do(t, ctx, "open the console: the sign-in page offers the provider", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS("#oidc")))
		if n := get(t, ctx, "count the token fields", chromedp.Evaluate[int](`document.querySelectorAll('input[name="token"]').length`)); n != 0 {
			t.Fatalf("the sign-in page offers a token sign-in beside the provider")
		}
		do(t, ctx, "sign in at the provider as "+login, chromedp.Click(chromedp.CSS("#oidc")),
			chromedp.WaitVisible(chromedp.CSS(`input[name="login"]`)),
			chromedp.SendKeys(chromedp.CSS(`input[name="login"]`), login),
			chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), "any"),
			chromedp.Click(chromedp.CSS(`button[type="submit"]`)))
		// The provider asks for consent the first time a person signs in to the console.
		if landed(t, ctx, base) == "consent" {
			do(t, ctx, "consent", chromedp.Click(chromedp.CSS(`button[autofocus]`)))
		}
	}

	// alice is in sre: an operator. Her answer is hers, by the provider's word.
	signIn("alice@example.com")
	do(t, ctx, "the console, live", chromedp.WaitVisible(chromedp.CSS("#status.live")))
	if me := text(t, ctx, "#me"); me != "answering as human:alice@example.com" {
		t.Fatalf("signed in as %q", me)
	}
	follow := runtimeProc(t, "submit", "-c", manifest, "--id", "t-oidc", "--follow", "w",
		`{"steps":[{"send":{"type":"approval","id":"a1","description":"ship it"}},{"await":"a1"},{"send":{"type":"approval","id":"a2","description":"ship it again"}},{"await":"a2"},{"result":"done"}]}`)
	card := cardFor(t, ctx, "ship it")
	do(t, ctx, "approve", chromedp.Click(chromedp.CSS(card+" button.approve")))
	outcome(t, ctx, card, `answered "yes" by human:alice@example.com`)
	shot(t, ctx, "1-operator")

	// bob is in eng only: a viewer. He sees the next request and cannot answer it.
	signIn("bob@example.com")
	do(t, ctx, "the console, live", chromedp.WaitVisible(chromedp.CSS("#status.live")))
	if me := text(t, ctx, "#me"); me != "bob@example.com (viewer)" {
		t.Fatalf("signed in as %q", me)
	}
	card = cardFor(t, ctx, "ship it again")
	if n := get(t, ctx, "count the card's buttons", chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, card+" button"))); n != 0 {
		t.Fatalf("a viewer's card has %d buttons", n)
	}
	if msg := text(t, ctx, card+" .viewer"); !strings.Contains(msg, "You may look, not answer") {
		t.Fatalf("a viewer's card says %q", msg)
	}
	shot(t, ctx, "2-viewer")
	id := strings.TrimSuffix(strings.TrimPrefix(card, `.request[data-id="`), `"]`)
	for path, body := range map[string]string{"/api/respond": fmt.Sprintf(`{"id":%q,"value":"yes"}`, id), "/v1/pending/" + id + "/answer": `{"value":"yes"}`,
		"/api/rules":           fmt.Sprintf(`{"id":%q,"supervisor":"oncall","verdict":"allow","rules":["Bash"]}`, id),
		"/api/budgets/w/raise": `{"usd":1000}`, "/api/policy/shadow/optimist/promote": `{}`, "/api/policy/shadow/optimist/demote": `{}`} {
		status := get(t, ctx, "post "+path+" from the viewer's page", chromedp.Evaluate[int](fmt.Sprintf(
			`fetch(%q, {method: "POST", headers: {"Content-Type": "application/json"}, body: %q}).then(r => r.status)`, path, body),
			chromedp.EvalAwaitPromise))
		if status != http.StatusForbidden {
			t.Errorf("a viewer's answer on %s: %d, want 403", path, status)
		}
	}

	// mallory is in no group the console allows: turned away, and not signed in.
	signIn("mallory@example.com")
	do(t, ctx, "the refusal", chromedp.WaitVisible(chromedp.CSS(".error")))
	if msg := text(t, ctx, ".error"); !strings.Contains(msg, "none of your groups may use this console") {
		t.Fatalf("mallory is told %q", msg)
	}
	status := get(t, ctx, "mallory reads the stream", chromedp.Evaluate[int](`fetch("/api/me").then(r => r.status)`, chromedp.EvalAwaitPromise))
	if status != http.StatusUnauthorized {
		t.Fatalf("mallory, refused, reads /api/me: %d", status)
	}
	shot(t, ctx, "3-refused")
	until(t, "agentmux console", con.stderr, "none of your groups")

	// On loopback too, a console with the identity provider makes no sign-in link of its
	// own: only the provider signs people in.
	local := exec.Command(os.Args[0], "console", "-c", manifest, "--addr", fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(t)))
	local.Env = []string{"AGENTMUX_OIDC_SECRET=" + oidcSecret}
	lcon := startProc(t, local)
	until(t, "agentmux console on loopback", lcon.stderr, "console up")
	if log := lcon.stderr.String(); strings.Contains(log, "token=") || strings.Contains(log, "sign_in_link_in") || !strings.Contains(log, "sign_in="+issuer) {
		t.Errorf("a console with the identity provider on loopback made a link of its own:\n%s", log)
	}

	// The shared token signs no one in on such a console.
	resp, err := http.PostForm(base+"/login", url.Values{"name": {"eve"}, "token": {consoleToken}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Request.URL.Query().Get("error") != "no-token" {
		t.Fatalf("a token sign-in ended at %s", resp.Request.URL)
	}

	// alice again answers the second request, and the audit names her for both.
	signIn("alice@example.com")
	do(t, ctx, "the console, live", chromedp.WaitVisible(chromedp.CSS("#status.live")))
	card = cardFor(t, ctx, "ship it again")
	do(t, ctx, "approve", chromedp.Click(chromedp.CSS(card+" button.approve")))
	if code := follow.wait(t, 30*time.Second); code != exitOK {
		t.Fatalf("submit --follow: exit %d\n%s", code, follow.stderr)
	}
	records, err := readAudit(t, manifest, "t-oidc")
	if err != nil {
		t.Fatal(err)
	}
	answers := 0
	for _, r := range records {
		if r.Kind == "answer" {
			answers++
			if r.Decider != "human:alice@example.com" {
				t.Errorf("request %s decided by %s; want human:alice@example.com", r.Request, r.Decider)
			}
		}
	}
	if answers != 2 {
		t.Fatalf("%d answers in the audit; want 2", answers)
	}
}

// landed waits, through the provider's redirects, until the browser is back at the
// console (base) or at the provider's consent page, and says which.
func landed(t *testing.T, ctx context.Context, base string) string {
	t.Helper()
	probe := fmt.Sprintf(`document.readyState !== "complete" ? "" : location.origin === %q ? "console" : document.querySelector('input[name="prompt"][value="consent"]') ? "consent" : ""`, base)
	var where string
	proctest.Within(t, 25*time.Second, func() error {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		var err error
		if where, err = chromedp.Run(pctx, chromedp.Evaluate[string](probe)); err == nil && where == "" {
			err = errors.New("still at the provider's login")
		}
		if err != nil { // a page being replaced fails the probe too
			return fmt.Errorf("the sign-in did not come back to the console within 25 s: %v", err)
		}
		return nil
	})
	return where
}

// appendManifest adds text to the manifest at path.
func appendManifest(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}
