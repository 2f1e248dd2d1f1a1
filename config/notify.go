package config

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Notify sends events to a webhook: [notify.X].
type Notify struct {
	Name    string   `toml:"-"`
	Webhook string   `toml:"webhook"`
	Events  []string `toml:"events"`
	Format  string   `toml:"format"` // json (Standard Webhooks) or slack
	// SecretEnv names the variable holding the signing secret ("whsec_" and base64).
	SecretEnv string `toml:"secret_env"`
	// ConsoleURL is where `agentmux console` is reached: messages link to the request.
	ConsoleURL string   `toml:"console_url"`
	Timeout    Duration `toml:"timeout"`   // one delivery attempt
	RetryFor   Duration `toml:"retry_for"` // how long an event without a deadline is retried
	// AllowPrivate lets the webhook lead to a loopback, private, link-local or
	// cloud-metadata address, which it may not otherwise.
	AllowPrivate bool `toml:"allow_private"`
}

// Events a [notify.X] may ask for.
var NotifyEvents = []string{"human.pending", "session.started", "session.ended", "request.answered", "pipeline.ended"}

// Formats of a [notify.X].
const (
	NotifyJSON  = "json"
	NotifySlack = "slack"
)

// Defaults of a [notify.X].
const (
	DefaultNotifyTimeout  = 10 * time.Second
	DefaultNotifyRetryFor = 5 * time.Minute
)

func (v *validator) notify(n *Notify) {
	at := func(key ...string) []string { return append([]string{"notify", n.Name}, key...) }
	if !namePattern.MatchString(n.Name) {
		v.add(at(), "notify name %q may only hold letters, digits, '_' and '-'", n.Name)
	}
	if u, err := url.Parse(n.Webhook); n.Webhook == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		v.add(at("webhook"), `%q is not a webhook URL; use webhook = "https://hooks.example/agentmux"`, n.Webhook)
	}
	if len(n.Events) == 0 {
		v.add(at(), `a notify needs events, some of %s`, strings.Join(NotifyEvents, ", "))
	}
	for i, e := range n.Events {
		if !slices.Contains(NotifyEvents, e) {
			v.add(append(at("events"), strconv.Itoa(i)), "%q is not an event to notify of; use %s", e, strings.Join(NotifyEvents, ", "))
		}
	}
	v.enum(at("format"), &n.Format, NotifyJSON, "a format", NotifyJSON, NotifySlack)
	if n.Format == NotifyJSON && n.SecretEnv == "" {
		v.add(at(), `a json notify is signed (Standard Webhooks): set secret_env to the variable holding its "whsec_…" secret`)
	}
	if n.ConsoleURL != "" {
		if u, err := url.Parse(n.ConsoleURL); err != nil || u.Host == "" {
			v.add(at("console_url"), "%q is not a URL", n.ConsoleURL)
		}
	}
	v.required(at("timeout"), &n.Timeout, DefaultNotifyTimeout, "would wait for a webhook forever")
	v.required(at("retry_for"), &n.RetryFor, DefaultNotifyRetryFor, "would never retry")
}
