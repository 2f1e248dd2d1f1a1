package node

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/wire"
)

// receiverScript is a webhook receiver of its own process: it listens on a free
// loopback port, prints the port, writes each POST as a JSON line to argv[1], and
// answers as argv[2] says: "redirect <url>", "status <code> <body>", or "ok".
const receiverScript = `import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
log, how = sys.argv[1], sys.argv[2].split(" ", 2)
class H(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(log, "a") as f:
            f.write(json.dumps({"path": self.path, "body": body.decode()}) + "\n")
        if how[0] == "redirect":
            self.send_response(302); self.send_header("Location", how[1]); self.end_headers()
        elif how[0] == "status":
            self.send_response(int(how[1])); self.end_headers(); self.wfile.write(how[2].encode())
        else:
            self.send_response(204); self.end_headers()
    def log_message(self, *args):
        pass
srv = HTTPServer(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
`

// hookProc is one receiver process.
type hookProc struct {
	url, log string
}

func startHook(t *testing.T, how string) *hookProc {
	t.Helper()
	log := filepath.Join(t.TempDir(), "posts")
	cmd := exec.Command("python3", "-c", receiverScript, log, how)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	port, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the receiver did not start: %v", err)
	}
	return &hookProc{url: "http://127.0.0.1:" + strings.TrimSpace(port) + "/hook", log: log}
}

// posts are the bodies the receiver got.
func (h *hookProc) posts(t *testing.T) []string {
	data, err := os.ReadFile(h.log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var p struct{ Body string }
		if json.Unmarshal([]byte(line), &p) == nil {
			out = append(out, p.Body)
		}
	}
	return out
}

// TestWebhooksGoOnlyWhereSent plays a webhook receiver, and the DNS behind one, against
// a node: a webhook that leads to a loopback address is refused without allow_private;
// a receiver's redirect to another address is not followed; what a refusing receiver
// answers never reaches the node's log; and agent text cannot mention the channel or
// forge a link in a Slack message.
func TestWebhooksGoOnlyWhereSent(t *testing.T) {
	stolen := startHook(t, "ok")                           // where a redirect would lead
	redirecting := startHook(t, "redirect "+stolen.url)    // allowed, but redirects
	refusing := startHook(t, "status 400 SECRET-ANSWER-7") // allowed, answers a secret
	guarded := startHook(t, "ok")                          // loopback, not allowed
	chat := startHook(t, "ok")                             // slack, allowed
	var logs proctest.Buffer
	f := start(t, simHost("w", `question_timeout = "1m"`)+fmt.Sprintf(`
[supervisors.oncall]
strategy = "human"
[[routes]]
supervisor = "oncall"
[notify.redirecting]
webhook = %q
events = ["session.ended"]
format = "slack"
allow_private = true
[notify.refusing]
webhook = %q
events = ["session.ended"]
format = "slack"
allow_private = true
[notify.guarded]
webhook = %q
events = ["session.ended"]
format = "slack"
[notify.chat]
webhook = %q
events = ["human.pending"]
format = "slack"
console_url = "https://console.example/"
allow_private = true
`, redirecting.url, refusing.url, guarded.url, chat.url), func(o *Options) {
		o.Log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	pending := pendingStore(t, f)
	results := make(chan *agent.Result, 1)
	text := `deploy <!channel> <!everyone> <@U024BE7LH> see <https://evil.example/login|the console> & more`
	session := f.n.Submit("w", "", script(send(`{"type":"approval","id":"a1","description":`+jsonString(text)+`}`), await("a1"), result), results)
	p := waitPending(t, pending, session)
	if _, err := pending.Respond(context.Background(), p.ID, "alice", wire.RespondRequest{Value: json.RawMessage(`"yes"`)}); err != nil {
		t.Fatal(err)
	}
	<-results

	failed := func(name string) float64 {
		return testutil.ToFloat64(f.n.Metrics.Notifications.WithLabelValues(name, "session.ended", "failed"))
	}
	proctest.Within(t, 20*time.Second, func() error {
		for _, name := range []string{"redirecting", "refusing", "guarded"} {
			if failed(name) != 1 {
				return fmt.Errorf("notify %s failed %v times; want 1 (refused at once, never retried)", name, failed(name))
			}
		}
		if len(chat.posts(t)) == 0 {
			return fmt.Errorf("the chat webhook got nothing")
		}
		return nil
	})
	if n := len(redirecting.posts(t)); n != 1 {
		t.Errorf("the redirecting receiver got %d posts; want 1", n)
	}
	if got := stolen.posts(t); len(got) != 0 {
		t.Errorf("the redirect was followed: %q", got)
	}
	if got := guarded.posts(t); len(got) != 0 {
		t.Errorf("a loopback webhook without allow_private got %q", got)
	}
	out := logs.String()
	for _, want := range []string{"redirected to " + stolen.url, "follow no redirect", "leads to 127.0.0.1", "allow_private = true",
		"400 Bad Request (15 bytes of answer, not shown)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the node's log does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "SECRET-ANSWER-7") {
		t.Errorf("a receiver's answer reached the node's log:\n%s", out)
	}
	var msg struct{ Text string }
	if err := json.Unmarshal([]byte(chat.posts(t)[0]), &msg); err != nil {
		t.Fatal(err)
	}
	for _, markup := range []string{"<!channel>", "<!everyone>", "<@U024BE7LH>", "<https://evil.example"} {
		if strings.Contains(msg.Text, markup) {
			t.Errorf("agent text reached Slack as markup %s: %s", markup, msg.Text)
		}
	}
	if !strings.Contains(msg.Text, "&lt;!channel&gt;") || !strings.Contains(msg.Text, "&amp; more") ||
		!strings.Contains(msg.Text, "<https://console.example/#/request/"+p.ID+"|answer it in the console>") {
		t.Errorf("the Slack message: %s", msg.Text)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
