package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentmux/agentmux/actionlink"

	"github.com/nats-io/nats.go"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/retry"
	"github.com/agentmux/agentmux/metrics"
	"github.com/agentmux/agentmux/wire"
)

// Bounds of a Notifier.
const (
	queueSize   = 1024 // events waiting to be sent; more are dropped and counted
	workers     = 4    // deliveries at once
	backoffMin  = 500 * time.Millisecond
	backoffMax  = 30 * time.Second
	maxResponse = 64 << 10 // read of a webhook's answer
)

// Config is what a Notifier needs.
type Config struct {
	Notify  *config.Notify
	Conn    *nats.Conn
	Getenv  func(string) string
	Client  *http.Client // nil: one that follows no redirect and reaches no private address (dial.go)
	Metrics *metrics.Set
	Log     *slog.Logger
}

// event is one notification to deliver.
type event struct {
	id       string // webhook-id: the same on every try
	typ      string
	deadline time.Time
	body     []byte
}

// Notifier sends one [notify.X]'s events to its webhook.
type Notifier struct {
	cfg    Config
	n      *config.Notify
	hook   *standardwebhooks.Webhook // nil: unsigned (slack without a secret)
	key    []byte                    // signs people's action links; nil: none
	client *http.Client
	queue  chan *event
	subs   []*nats.Subscription
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// UnsetSecret is what Start says of a notify whose signing secret's variable is unset.
func UnsetSecret(n *config.Notify) string {
	return fmt.Sprintf("notify %s: $%s, its signing secret, is not set; export it (\"whsec_\" and base64)", n.Name, n.SecretEnv)
}

// Start subscribes to the notifier's events, in one queue group across the fleet.
func Start(cfg Config) (*Notifier, error) {
	n := cfg.Notify
	x := &Notifier{cfg: cfg, n: n, client: cfg.Client, queue: make(chan *event, queueSize)}
	if x.client == nil {
		x.client = NewClient(n.Timeout.D(), n.AllowPrivate)
	}
	if n.SecretEnv != "" {
		secret := cfg.Getenv(n.SecretEnv)
		if secret == "" {
			return nil, errors.New(UnsetSecret(n))
		}
		hook, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			return nil, fmt.Errorf("notify %s: $%s is not a Standard Webhooks secret (\"whsec_\" and base64): %w", n.Name, n.SecretEnv, err)
		}
		x.hook = hook
	}
	if n.ActionKeyEnv != "" {
		key, err := actionlink.Key(n.ActionKeyEnv, cfg.Getenv(n.ActionKeyEnv))
		if err != nil {
			return nil, fmt.Errorf("notify %s: %w", n.Name, err)
		}
		x.key = key
	}
	x.ctx, x.cancel = context.WithCancel(context.Background())
	group := "agentmux-notify-" + n.Name
	for _, typ := range n.Events {
		subject := wire.EventsOfType(typ)
		if typ == "human.pending" {
			subject = wire.HumanSubjects
		}
		sub, err := cfg.Conn.QueueSubscribe(subject, group, func(m *nats.Msg) {
			if err := bus.CheckEvent(m, subject); err != nil {
				x.cfg.Log.Warn("event refused", "notify", x.n.Name, "err", err)
				return
			}
			x.enqueue(typ, m.Data)
		})
		if err != nil {
			x.Stop()
			return nil, fmt.Errorf("notify %s: subscribe to %s: %w", n.Name, subject, err)
		}
		x.subs = append(x.subs, sub)
	}
	for range workers {
		x.wg.Add(1)
		go x.work()
	}
	return x, nil
}

// Stop unsubscribes and abandons what is still being retried.
func (x *Notifier) Stop() {
	for _, sub := range x.subs {
		_ = sub.Unsubscribe()
	}
	x.cancel()
	x.wg.Wait()
}

func (x *Notifier) count(typ, outcome string) {
	x.cfg.Metrics.Notifications.WithLabelValues(x.n.Name, typ, outcome).Inc()
}

// enqueue turns a NATS message into the notification to send.
func (x *Notifier) enqueue(typ string, data []byte) {
	ev, err := x.event(typ, data)
	if err != nil {
		x.cfg.Log.Warn("notify: an event that cannot be sent", "notify", x.n.Name, "type", typ, "err", err)
		x.count(typ, "invalid")
		return
	}
	select {
	case x.queue <- ev:
	default:
		x.count(typ, "dropped")
		x.cfg.Log.Warn("notify: too many notifications waiting; one dropped", "notify", x.n.Name, "type", typ, "id", ev.id)
	}
}

// message is the Standard Webhooks payload.
type message struct {
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

func (x *Notifier) event(typ string, data []byte) (*event, error) {
	now := time.Now()
	ev := &event{typ: typ, deadline: now.Add(x.n.RetryFor.D())}
	var text, link string // text holds what agents wrote; link is the console's
	switch typ {
	case "human.pending":
		var p wire.PendingRequest
		if err := json.Unmarshal(data, &p); err != nil {
			return nil, err
		}
		ev.id, ev.deadline = "human.pending-"+p.ID, p.Deadline
		text = fmt.Sprintf("%s waits for a person: %s %q (host %s, session %s); %s left, then the default %s",
			p.ID, p.Type, p.Text, p.Host, p.Session, time.Until(p.Deadline).Round(time.Second), p.Default)
		if u := x.link("request", p.ID); u != "" {
			link = fmt.Sprintf(" — <%s|answer it in the console>", u)
		}
		if x.n.Buttons() {
			ev.body = slackButtons(slackEscape(text)+link, &p)
			return ev, nil
		}
		if x.key != nil && x.n.Format != config.NotifySlack {
			ev.body, _ = json.Marshal(&message{Type: typ, Timestamp: now.UTC(), Data: x.withActions(&p)})
			return ev, nil
		}
	case "pipeline.ended":
		var r wire.PipelineRun
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, err
		}
		ev.id = "pipeline.ended-" + r.ID
		text = fmt.Sprintf("pipeline %s run %s ended %s", r.Pipeline, r.ID, r.Outcome)
		if r.Error != "" {
			text += ": " + r.Error
		}
	default:
		var s struct {
			Session string `json:"session"`
			Host    string `json:"host"`
			Attempt int    `json:"attempt"`
			Outcome string `json:"outcome"`
			Error   string `json:"error"`
			ID      string `json:"id"`
			Decider string `json:"decider"`
		}
		if err := json.Unmarshal(data, &s); err != nil {
			return nil, err
		}
		ev.id = fmt.Sprintf("%s-%s-%d%s", typ, s.Session, s.Attempt, s.ID)
		text = fmt.Sprintf("session %s on %s: %s %s", s.Session, s.Host, typ, s.Outcome)
		if s.Error != "" {
			text += ": " + s.Error
		}
		if u := x.link("session", s.Session); u != "" {
			link = fmt.Sprintf(" — <%s|open it in the console>", u)
		}
	}
	if x.n.Format == config.NotifySlack {
		ev.body, _ = json.Marshal(map[string]string{"text": slackEscape(text) + link})
	} else {
		ev.body, _ = json.Marshal(&message{Type: typ, Timestamp: now.UTC(), Data: data})
	}
	return ev, nil
}

// slackEscaper escapes the three characters Slack reads as markup, so text an agent
// wrote cannot mention <!channel> or <!everyone>, name a user, or make a link.
var slackEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func slackEscape(s string) string { return slackEscaper.Replace(s) }

// SlackEscape is s as Slack text that mentions no one and links nowhere.
func SlackEscape(s string) string { return slackEscape(s) }

// link is the console's page of a request or a session, when the console's URL is known.
func (x *Notifier) link(kind, id string) string {
	if x.n.ConsoleURL == "" || id == "" {
		return ""
	}
	return strings.TrimRight(x.n.ConsoleURL, "/") + "/#/" + kind + "/" + id
}

func (x *Notifier) work() {
	defer x.wg.Done()
	for {
		select {
		case <-x.ctx.Done():
			return
		case ev := <-x.queue:
			x.deliver(ev)
		}
	}
}

// errPermanent is a webhook's refusal that no retry changes (a 4xx but 408 and 429).
var errPermanent = errors.New("refused")

// deliver sends ev, trying again with backoff until its deadline: waits that double
// with jitter, or as long as the webhook's Retry-After asks.
func (x *Notifier) deliver(ev *event) {
	pace := retry.Backoff{Min: backoffMin, Max: backoffMax}
	for try := 1; ; try++ {
		after, err := x.send(ev)
		if err == nil {
			x.count(ev.typ, "sent")
			return
		}
		wait := pace.Next(after)
		if errors.Is(err, errPermanent) || time.Now().Add(wait).After(ev.deadline) {
			x.count(ev.typ, "failed")
			x.cfg.Log.Warn("notify: not delivered", "notify", x.n.Name, "id", ev.id, "tries", try, "err", err)
			return
		}
		x.count(ev.typ, "retried")
		if !retry.Sleep(x.ctx, wait) {
			return
		}
	}
}

// send makes one try; a refusal worth another says how long the webhook asked to wait
// (Retry-After; 0: it did not).
func (x *Notifier) send(ev *event) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(x.ctx, x.n.Timeout.D())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, x.n.Webhook, bytes.NewReader(ev.body))
	if err != nil {
		return 0, fmt.Errorf("%w: %v", errPermanent, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "agentmux/"+metrics.Version())
	if x.hook != nil {
		now := time.Now()
		sig, err := x.hook.Sign(ev.id, now, ev.body)
		if err != nil {
			return 0, fmt.Errorf("%w: sign: %v", errPermanent, err)
		}
		req.Header.Set(standardwebhooks.HeaderWebhookID, ev.id)
		req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, fmt.Sprint(now.Unix()))
		req.Header.Set(standardwebhooks.HeaderWebhookSignature, sig)
	}
	resp, err := x.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	// What a receiver answers is its own, and never reaches the log: it could be
	// anything, from a secret to an attack on whoever reads the log.
	n, _ := io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return 0, nil
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return retry.After(resp.Header, time.Now()), fmt.Errorf("webhook answered %s", resp.Status)
	}
	return 0, fmt.Errorf("%w: webhook answered %s (%d bytes of answer, not shown)", errPermanent, resp.Status, n)
}
