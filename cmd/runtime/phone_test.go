package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/agentmux/agentmux/internal/proctest"
)

// TestConsoleOnAPhone: on a 390-px-wide phone screen (Chromium's mobile emulation),
// the console fits the screen, its buttons are a thumb's size, and a request is
// answered by a tap; the console is an installable web app (Chromium finds nothing
// that stops its installation), and a request that arrives once the person allowed
// notifications shows one, which names the request. Screenshots go to the CI
// artifacts.
func TestConsoleOnAPhone(t *testing.T) {
	t.Parallel()
	manifest := consoleManifest(t)
	up := runtimeProc(t, "up", "-c", manifest)
	until(t, "agentmux up", up.stderr, "node up")
	base := fmt.Sprintf("http://127.0.0.1:%d", proctest.FreePort(t))
	con := runtimeProc(t, "console", "-c", manifest, "--addr", strings.TrimPrefix(base, "http://"), "--as", "ana")
	until(t, "agentmux console", con.stderr, "console up")
	ctx := browser(t)
	do(t, ctx, "a phone's screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulatePortrait, chromedp.EmulateTouch, chromedp.EmulateScale(3)))
	do(t, ctx, "allow notifications", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, chromedp.FromContext(ctx).Browser, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
			Permission: &cdpbrowser.PermissionDescriptor{Name: "notifications"}, Setting: cdpbrowser.PermissionSettingGranted, Origin: base})
		return err
	}))
	do(t, ctx, "open the console", chromedp.Navigate(signInLink(t, con.stderr.String())), chromedp.WaitVisible(chromedp.CSS("#status.live")))

	// Installable: the manifest, its icons and the service worker, as Chromium judges them.
	get(t, ctx, "the service worker, active", chromedp.Poll[bool](`navigator.serviceWorker.controller !== null || navigator.serviceWorker.ready.then(() => true)`,
		chromedp.WithPollingTimeout(25*time.Second)))
	var errs page.GetInstallabilityErrorsResult
	do(t, ctx, "installability", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) (err error) {
		errs, err = cdp.Call(ctx, tg, page.GetInstallabilityErrors, cdp.Empty{})
		return err
	}))
	for _, e := range errs.InstallabilityErrors {
		t.Errorf("Chromium would not install the console: %s %v", e.ErrorID, e.ErrorArguments)
	}

	// What the page shows, as Chromium took it: headless Chromium may drop a shown
	// notification from getNotifications before a busy test reads the list.
	get(t, ctx, "watch the notifications shown", chromedp.Evaluate[bool](`(() => {
		window.shown = [];
		const show = ServiceWorkerRegistration.prototype.showNotification;
		ServiceWorkerRegistration.prototype.showNotification = function (title, o) {
			return show.call(this, title, o).then(() => { window.shown.push(title + " | " + o.body + " | " + o.data.url); });
		};
		return true;
	})()`))
	follow := runtimeProc(t, "submit", "-c", manifest, "--id", "t-phone", "--follow", "w",
		`{"steps":[{"send":{"type":"approval","id":"a1","description":"deploy v2 to production, then tell the team in #releases","tool":"Bash","input":{"command":"make deploy ENV=production VERSION=v2.0.0-rc.1 && curl -X POST https://hooks.example/releases -d 'v2 is out'"}}},{"await":"a1"},{"result":"done"}]}`)
	card := cardFor(t, ctx, "deploy v2 to production, then tell the team in #releases")
	shown := get(t, ctx, "the notification", chromedp.Poll[string](`window.shown.join("\n")`, chromedp.WithPollingTimeout(25*time.Second)))
	id := strings.TrimSuffix(strings.TrimPrefix(card, `.request[data-id="`), `"]`)
	if shown != "approval on w | deploy v2 to production, then tell the team in #releases | /#/request/"+id {
		t.Errorf("the notification: %q", shown)
	}

	wide := get(t, ctx, "the page's width", chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
	if wide > 390 {
		t.Errorf("the page is %d px wide on a 390-px screen: it scrolls sideways", wide)
	}
	for _, b := range []string{"button.approve", "button.deny"} {
		h := get(t, ctx, "the height of "+b, chromedp.Evaluate[float64](fmt.Sprintf(`document.querySelector(%q).getBoundingClientRect().height`, card+" "+b)))
		if h < 44 {
			t.Errorf("%s is %.0f px high; a thumb needs 44", b, h)
		}
	}
	// The first screen shows the request to act on, its buttons included; no keyboard
	// hint on a touch screen, and no bulk bar before a selection.
	if bottom := get(t, ctx, "where the Approve button ends", chromedp.Evaluate[float64](fmt.Sprintf(`document.querySelector(%q).getBoundingClientRect().bottom`, card+" button.approve"))); bottom > 844 {
		t.Errorf("the first request's Approve button ends %.0f px down a 844-px screen: the person must scroll to act", bottom)
	}
	for _, sel := range []string{".keys", "#bulk"} {
		if shownAt := get(t, ctx, sel+" shown", chromedp.Evaluate[bool](fmt.Sprintf(`getComputedStyle(document.querySelector(%q)).display !== "none"`, sel))); shownAt {
			t.Errorf("%s shows on a phone before anything is selected", sel)
		}
	}
	shot(t, ctx, "1-waiting")
	do(t, ctx, "tap Approve", chromedp.Tap(chromedp.CSS(card+" button.approve")))
	outcome(t, ctx, card, `answered "yes" by human:ana`)
	shot(t, ctx, "2-answered")
	if code := follow.wait(t, 30*time.Second); code != exitOK {
		t.Fatalf("submit --follow: exit %d\n%s", code, follow.stderr)
	}
}
