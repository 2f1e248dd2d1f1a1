package node

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/wire"
)

// webhookSecret is a Standard Webhooks secret: "whsec_" and base64 key bytes.
var webhookSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("agentmux test webhook key, 32 b!"))

// delivery is one POST a receiver got.
type delivery struct {
	id, timestamp, signature string
	body                     []byte
	at                       time.Time
}

// receiver is a webhook on loopback: it answers each delivery id with the statuses of
// fails first, then 200, and keeps every POST.
type receiver struct {
	srv   *httptest.Server
	fails []int
	mu    sync.Mutex
	got   []delivery
	tries map[string]int
}

func newReceiver(t *testing.T, fails ...int) *receiver {
	r := &receiver{fails: fails, tries: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		id := req.Header.Get("webhook-id")
		r.mu.Lock()
		r.got = append(r.got, delivery{id: id, timestamp: req.Header.Get("webhook-timestamp"), signature: req.Header.Get("webhook-signature"), body: body, at: time.Now()})
		try := r.tries[id+string(body[:min(len(body), 40)])]
		r.tries[id+string(body[:min(len(body), 40)])]++
		r.mu.Unlock()
		if try < len(r.fails) {
			if r.fails[try] == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "2")
			}
			w.WriteHeader(r.fails[try])
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// TestNotificationsAreSignedAndRetried: a request waiting for a person and the session's
// end reach a webhook as signed Standard Webhooks messages, tried again after failures
// with the same id; a Slack-format notify links to the request in the console; a webhook
// that refuses is not tried again.
func TestNotificationsAreSignedAndRetried(t *testing.T) {
	hook := newReceiver(t, http.StatusServiceUnavailable, http.StatusBadGateway)
	slack := newReceiver(t)
	refusing := newReceiver(t, http.StatusBadRequest, http.StatusBadRequest, http.StatusBadRequest)
	f := start(t, simHost("w", `question_timeout = "1m"`)+fmt.Sprintf(`
[supervisors.oncall]
strategy = "human"
[[routes]]
supervisor = "oncall"
[notify.hook]
webhook = %q
events = ["human.pending", "session.ended"]
secret_env = "TEST_WEBHOOK_SECRET"
allow_private = true
[notify.chat]
webhook = %q
events = ["human.pending"]
format = "slack"
console_url = "https://console.example/"
allow_private = true
[notify.refusing]
webhook = %q
events = ["session.ended"]
secret_env = "TEST_WEBHOOK_SECRET"
allow_private = true
`, hook.srv.URL, slack.srv.URL, refusing.srv.URL), func(o *Options) {
		o.Getenv = func(k string) string {
			if k == "TEST_WEBHOOK_SECRET" {
				return webhookSecret
			}
			return ""
		}
	})
	requests := pendingStore(t, f)
	results := make(chan *agent.Result, 1)
	session := f.n.Submit("w", "", script(send(`{"type":"approval","id":"a1","description":"deploy to staging"}`), await("a1"), result), results)
	p := waitPending(t, requests, session)
	proctest.Within(t, 20*time.Second, func() error {
		if n := len(hook.deliveries()); n < 3 {
			return fmt.Errorf("%d deliveries of human.pending; want 3 (two failures, then taken)", n)
		}
		return nil
	})
	if _, err := requests.Respond(context.Background(), p.ID, "alice", wire.RespondRequest{Value: json.RawMessage(`"yes"`)}); err != nil {
		t.Fatal(err)
	}
	<-results
	proctest.Within(t, 20*time.Second, func() error {
		if n := len(hook.deliveries()); n < 4 {
			return fmt.Errorf("%d deliveries; want the session's end too", n)
		}
		return nil
	})

	verifier, err := standardwebhooks.NewWebhook(webhookSecret)
	if err != nil {
		t.Fatal(err)
	}
	got := hook.deliveries()
	for i, d := range got[:3] {
		if d.id != "human.pending-"+p.ID {
			t.Errorf("try %d has webhook-id %q; want human.pending-%s on every try", i, d.id, p.ID)
		}
	}
	for _, d := range got {
		h := http.Header{}
		h.Set("webhook-id", d.id)
		h.Set("webhook-timestamp", d.timestamp)
		h.Set("webhook-signature", d.signature)
		if err := verifier.Verify(d.body, h); err != nil {
			t.Errorf("delivery %s: the signature does not verify: %v", d.id, err)
		}
		// The same signature computed here, by the spec: HMAC-SHA256 of id.timestamp.body.
		key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(webhookSecret, "whsec_"))
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(d.id + "." + d.timestamp + "." + string(d.body)))
		if want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)); d.signature != want {
			t.Errorf("delivery %s: signature %q, want %q", d.id, d.signature, want)
		}
	}
	var pending struct {
		Type string `json:"type"`
		Data struct {
			ID, Session, Text string
		} `json:"data"`
	}
	if err := json.Unmarshal(got[2].body, &pending); err != nil || pending.Type != "human.pending" || pending.Data.ID != p.ID ||
		pending.Data.Session != session || pending.Data.Text != "deploy to staging" {
		t.Errorf("human.pending message %s (%v)", got[2].body, err)
	}
	var ended struct {
		Type string `json:"type"`
		Data struct {
			Session, Outcome string
		} `json:"data"`
	}
	if err := json.Unmarshal(got[3].body, &ended); err != nil || ended.Type != "session.ended" || ended.Data.Session != session || ended.Data.Outcome != "ok" {
		t.Errorf("session.ended message %s (%v)", got[3].body, err)
	}

	proctest.Within(t, 10*time.Second, func() error {
		if len(slack.deliveries()) == 0 || len(refusing.deliveries()) == 0 {
			return fmt.Errorf("slack got %d, the refusing webhook %d", len(slack.deliveries()), len(refusing.deliveries()))
		}
		return nil
	})
	var text struct{ Text string }
	if err := json.Unmarshal(slack.deliveries()[0].body, &text); err != nil ||
		!strings.Contains(text.Text, "<https://console.example/#/request/"+p.ID+"|answer it in the console>") || !strings.Contains(text.Text, `"deploy to staging"`) {
		t.Errorf("slack message %s (%v)", slack.deliveries()[0].body, err)
	}
	m := f.n.Metrics.Notifications
	proctest.Within(t, 10*time.Second, func() error { // counted once the webhook's answer is read
		for _, c := range []struct {
			notify, event, outcome string
			want                   float64
		}{
			{"hook", "human.pending", "retried", 2}, {"hook", "human.pending", "sent", 1}, {"hook", "session.ended", "sent", 1},
			{"chat", "human.pending", "sent", 1}, {"refusing", "session.ended", "failed", 1}, {"refusing", "session.ended", "retried", 0},
		} {
			if v := testutil.ToFloat64(m.WithLabelValues(c.notify, c.event, c.outcome)); v != c.want {
				return fmt.Errorf("notifications_total{%s,%s,%s} = %v; want %v", c.notify, c.event, c.outcome, v, c.want)
			}
		}
		return nil
	})
	if n := len(refusing.deliveries()); n != 1 {
		t.Errorf("the refusing webhook got %d tries; want 1 (a 400 is not retried)", n)
	}
}

// TestWebhookRetryAfterIsWaitedFor: a webhook that answers 429 with Retry-After: 2 is
// tried again no sooner than 2 s later (the backoff alone would try after 0.25-0.5 s).
func TestWebhookRetryAfterIsWaitedFor(t *testing.T) {
	hook := newReceiver(t, http.StatusTooManyRequests)
	f := start(t, simHost("w", "")+fmt.Sprintf(`
[notify.hook]
webhook = %q
events = ["session.ended"]
format = "slack"
allow_private = true
`, hook.srv.URL))
	results := make(chan *agent.Result, 1)
	f.n.Submit("w", "", script(result), results)
	<-results
	proctest.Within(t, 20*time.Second, func() error {
		if n := len(hook.deliveries()); n < 2 {
			return fmt.Errorf("%d deliveries of session.ended; want 2 (a 429, then taken)", n)
		}
		return nil
	})
	got := hook.deliveries()
	if gap := got[1].at.Sub(got[0].at); gap < 2*time.Second {
		t.Fatalf("tried again %v after a 429 asking for 2 s", gap)
	}
}
