package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentmux/agentmux/internal/proctest"
)

const (
	actionKey     = "0123456789abcdef0123456789abcdef-action-links"
	slackSigning  = "8f742231b10e8888abcd99yyyzzz85a5"
	notifySecret  = "whsec_YWdlbnRtdXggdGVzdCB3ZWJob29rIGtleSwgMzIgYiE="
	stepsTwoAsked = `{"steps":[{"send":{"type":"approval","id":"a1","description":"deploy to prod"}},{"await":"a1"},` +
		`{"send":{"type":"approval","id":"a2","description":"drop the cache"}},{"await":"a2"},{"result":"done"}]}`
)

// inbox keeps every POST it gets, by path.
type inbox struct {
	srv *httptest.Server
	mu  sync.Mutex
	got map[string][][]byte
}

func newInbox(t *testing.T) *inbox {
	in := &inbox{got: map[string][][]byte{}}
	in.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		in.mu.Lock()
		in.got[r.URL.Path] = append(in.got[r.URL.Path], body)
		in.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(in.srv.Close)
	return in
}

// await returns the first POST to path that holds want, polling until a deadline.
func (in *inbox) await(t *testing.T, path, want string) []byte {
	t.Helper()
	var got []byte
	proctest.Within(t, 30*time.Second, func() error {
		in.mu.Lock()
		defer in.mu.Unlock()
		for _, b := range in.got[path] {
			if strings.Contains(string(b), want) {
				got = b
				return nil
			}
		}
		return fmt.Errorf("no POST to %s holding %q within 30 s", path, want)
	})
	return got
}

// TestActFromANotification: a mail-like webhook carries alice's signed links and a
// Slack message carries buttons. A link scanner's GET decides nothing; a changed link
// is refused; alice's confirmed link answers as her; a second link of the same
// request is refused. In Slack, an unsigned callback is refused, a user not mapped to
// a person is told so and decides nothing, and bob's press answers as him and
// replaces the message with who decided. The audit names both.
func TestActFromANotification(t *testing.T) {
	t.Parallel()
	mail, slackHook := newInbox(t), newInbox(t)
	manifest := consoleManifest(t)
	port := proctest.FreePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	appendManifest(t, manifest, fmt.Sprintf(`[notify.mail]
webhook = "%s/mail"
events = ["human.pending"]
secret_env = "AGENTMUX_WEBHOOK_SECRET"
console_url = %q
people = ["alice@example.com"]
action_key_env = "AGENTMUX_ACTION_KEY"
allow_private = true
[notify.team]
webhook = "%s/hook"
events = ["human.pending"]
format = "slack"
console_url = %q
users = { U1BOB = "bob@example.com" }
signing_secret_env = "SLACK_SIGNING_SECRET"
allow_private = true
`, mail.srv.URL, base, slackHook.srv.URL, base))
	env := []string{"AGENTMUX_WEBHOOK_SECRET=" + notifySecret, "AGENTMUX_ACTION_KEY=" + actionKey, "SLACK_SIGNING_SECRET=" + slackSigning}
	upCmd := exec.Command(os.Args[0], "up", "-c", manifest)
	upCmd.Env = env
	up := startProc(t, upCmd)
	until(t, "agentmux up", up.stderr, "node up")
	conCmd := exec.Command(os.Args[0], "console", "-c", manifest, "--addr", fmt.Sprintf("127.0.0.1:%d", port))
	conCmd.Env = env
	con := startProc(t, conCmd)
	until(t, "agentmux console", con.stderr, "console up")
	follow := runtimeProc(t, "submit", "-c", manifest, "--id", "t-act", "--follow", "w", stepsTwoAsked)

	// The mail: alice's links, Approve and Deny.
	var msg struct {
		Data struct {
			ID      string `json:"id"`
			Actions []struct{ Person, Label, URL string }
		}
	}
	if err := json.Unmarshal(mail.await(t, "/mail", "deploy to prod"), &msg); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{}
	for _, a := range msg.Data.Actions {
		if a.Person != "alice@example.com" || !strings.HasPrefix(a.URL, base+"/act/mail/") {
			t.Fatalf("action %+v", a)
		}
		links[a.Label] = a.URL
	}
	if len(links) != 2 || links["Approve"] == "" || links["Deny"] == "" {
		t.Fatalf("links %v; want Approve and Deny", links)
	}

	// A link scanner fetches every URL of a mail: that shows the page, and decides nothing.
	page := httpGet(t, links["Approve"], http.StatusOK)
	if !strings.Contains(page, "as <strong>alice@example.com</strong>") || !strings.Contains(page, `id="confirm"`) {
		t.Fatalf("the confirmation page:\n%s", page)
	}
	// A changed link, or one moved to another notify, acts as no one.
	token := links["Approve"][strings.LastIndex(links["Approve"], "/")+1:]
	payload, sig, _ := strings.Cut(token, ".")
	raw, _ := base64.RawURLEncoding.DecodeString(payload)
	forged := base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(raw), "alice@example.com", "mallory@example.com", 1))) + "." + sig
	for name, u := range map[string]string{"another person's": base + "/act/mail/" + forged, "another notify's": base + "/act/team/" + token} {
		if body := httpPost(t, u, http.StatusForbidden); !strings.Contains(body, "not made by agentmux, or was changed") {
			t.Errorf("%s link: %s", name, body)
		}
	}

	// alice opens her link in a browser and confirms.
	ctx := browser(t)
	do(t, ctx, "open alice's Approve link", chromedp.Navigate(links["Approve"]), chromedp.WaitVisible(chromedp.CSS("#confirm")))
	shot(t, ctx, "1-confirm")
	do(t, ctx, "confirm", chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS(".done")))
	if done := text(t, ctx, ".done"); done != "Answered Approve as alice@example.com." {
		t.Fatalf("after confirming: %q", done)
	}
	shot(t, ctx, "2-answered")
	// The request took its answer: the Deny link now does nothing.
	if body := httpPost(t, links["Deny"], http.StatusOK); !strings.Contains(body, "had its answer already") || !strings.Contains(body, "by alice@example.com") {
		t.Fatalf("the Deny link after the Approve:\n%s", body)
	}

	// Slack: the second request's message has buttons.
	var sm struct {
		Text   string `json:"text"`
		Blocks []struct {
			Type     string `json:"type"`
			BlockID  string `json:"block_id"`
			Elements []struct {
				ActionID string `json:"action_id"`
				Value    string `json:"value"`
				Text     struct{ Text string }
			}
		}
	}
	if err := json.Unmarshal(slackHook.await(t, "/hook", "drop the cache"), &sm); err != nil {
		t.Fatal(err)
	}
	var approve struct{ block, action, value string }
	for _, b := range sm.Blocks {
		for _, e := range b.Elements {
			if e.Text.Text == "Approve" {
				approve.block, approve.action, approve.value = b.BlockID, e.ActionID, e.Value
			}
		}
	}
	if approve.value == "" {
		t.Fatalf("no Approve button in %+v", sm)
	}
	press := func(user, secret string) int {
		payload, _ := json.Marshal(map[string]any{"type": "block_actions", "user": map[string]string{"id": user},
			"response_url": slackHook.srv.URL + "/response/" + user, "message": map[string]string{"text": sm.Text},
			"actions": []map[string]string{{"type": "button", "block_id": approve.block, "action_id": approve.action, "value": approve.value}}})
		return slackCallback(t, base+"/slack/team", secret, url.Values{"payload": {string(payload)}}.Encode())
	}
	if code := press("U1BOB", "not the signing secret"); code != http.StatusUnauthorized {
		t.Fatalf("a callback Slack did not sign: %d", code)
	}
	if code := press("U9EVE", slackSigning); code != http.StatusOK {
		t.Fatalf("an unmapped user's press: %d", code)
	}
	if told := slackHook.await(t, "/response/U9EVE", "not one of [notify.team] users"); !strings.Contains(string(told), `"response_type":"ephemeral"`) {
		t.Fatalf("eve was told %s", told)
	}
	if code := press("U1BOB", slackSigning); code != http.StatusOK {
		t.Fatalf("bob's press: %d", code)
	}
	if updated := slackHook.await(t, "/response/U1BOB", "Approve by bob@example.com (human:bob@example.com)"); !strings.Contains(string(updated), `"replace_original":true`) {
		t.Fatalf("the message update %s", updated)
	}

	if code := follow.wait(t, 30*time.Second); code != exitOK {
		t.Fatalf("submit --follow: exit %d\n%s", code, follow.stderr)
	}
	if d := answeredBy(t, manifest, "t-act"); d["a1"] != "human:alice@example.com" || d["a2"] != "human:bob@example.com" {
		t.Fatalf("deciders %v; want a1 by alice and a2 by bob; eve decided nothing", d)
	}
}

// slackCallback posts body to the console as Slack does: signed with the app's
// signing secret over "v0:<timestamp>:<body>".
func slackCallback(t *testing.T, u, secret, body string) int {
	t.Helper()
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + ts + ":" + body))
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func httpGet(t *testing.T, u string, want int) string {
	t.Helper()
	resp, err := http.Get(u)
	return httpBody(t, resp, err, want)
}

func httpPost(t *testing.T, u string, want int) string {
	t.Helper()
	resp, err := http.Post(u, "application/x-www-form-urlencoded", nil)
	return httpBody(t, resp, err, want)
}

func httpBody(t *testing.T, resp *http.Response, err error, want int) string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %s, want %d\n%s", resp.Request.Method, resp.Request.URL, resp.Status, want, b)
	}
	return string(b)
}
