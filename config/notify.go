package config

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentmux/agentmux/wire"
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
	// AllowPrivate lets the webhook (and a Slack response_url) lead to a loopback,
	// private, link-local or cloud-metadata address, which it may not otherwise.
	AllowPrivate bool `toml:"allow_private"`
	// People each get, in a human.pending notification, links that act on the
	// request as them (approve, deny, each option), signed with the key in
	// ActionKeyEnv, which the console holds too.
	People       []string `toml:"people"`
	ActionKeyEnv string   `toml:"action_key_env"`
	// Users maps Slack user ids to people: a Slack message's buttons act as the
	// person who pressed them, once the console has checked Slack's signature with
	// the app's signing secret (SigningSecretEnv).
	Users            map[string]string `toml:"users"`
	SigningSecretEnv string            `toml:"signing_secret_env"`
}

// Buttons reports whether the notify's Slack messages carry buttons.
func (n *Notify) Buttons() bool { return n.Format == NotifySlack && len(n.Users) > 0 }

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
	v.notifyActions(n)
	v.required(at("timeout"), &n.Timeout, DefaultNotifyTimeout, "would wait for a webhook forever")
	v.required(at("retry_for"), &n.RetryFor, DefaultNotifyRetryFor, "would never retry")
}

// notifyActions checks what lets people act from a notification: links for people,
// buttons for Slack users.
func (v *validator) notifyActions(n *Notify) {
	at := func(key ...string) []string { return append([]string{"notify", n.Name}, key...) }
	for i, p := range n.People {
		if !wire.IsPerson(p) {
			v.add(at("people", strconv.Itoa(i)), "%q cannot name a person: use their email or a name of letters, digits and _ + @ . -", p)
		}
	}
	if len(n.People) > 0 {
		if n.ActionKeyEnv == "" {
			v.add(at(), "links for people are signed: set action_key_env to the variable holding their key (the console reads it too)")
		}
		if n.ConsoleURL == "" {
			v.add(at(), "links for people lead to the console: set console_url")
		}
		if n.Format == NotifySlack {
			v.add(at("people"), "a slack notify acts through its buttons: map Slack users to people with users = { U123 = \"alice@example.com\" }")
		}
	}
	v.envName(at("action_key_env"), n.ActionKeyEnv)
	for id, p := range n.Users {
		if !wire.IsPerson(p) {
			v.add(at("users", id), "%q cannot name a person: use their email or a name of letters, digits and _ + @ . -", p)
		}
	}
	if len(n.Users) > 0 {
		if n.Format != NotifySlack {
			v.add(at("users"), "users maps Slack users, for format = \"slack\"")
		}
		if n.SigningSecretEnv == "" {
			v.add(at(), "Slack's buttons come back signed: set signing_secret_env to the variable holding the Slack app's signing secret")
		}
	}
	v.envName(at("signing_secret_env"), n.SigningSecretEnv)
}
