package notify

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/agentmux/agentmux/actionlink"
	"github.com/agentmux/agentmux/wire"
)

// Slack's bounds on a message's buttons.
const (
	slackMaxButtons = 25   // elements of an actions block
	slackLabel      = 75   // characters of a button's text
	slackValueBytes = 2000 // a button's value
)

// Link is one signed action link of a human.pending notification.
type Link struct {
	Person string `json:"person"`
	Label  string `json:"label"`
	URL    string `json:"url"`
}

// pendingWithActions is a human.pending notification's data: the request, and each
// person's links.
type pendingWithActions struct {
	*wire.PendingRequest
	Actions []Link `json:"actions,omitempty"`
}

// withActions is p with a link per person and action, each signed, bound to p and to
// that person, and valid until p's deadline.
func (x *Notifier) withActions(p *wire.PendingRequest) json.RawMessage {
	out := pendingWithActions{PendingRequest: p}
	for _, person := range x.n.People {
		for _, a := range actionlink.For(p) {
			a.Person = person
			out.Actions = append(out.Actions, Link{Person: person, Label: a.Label,
				URL: actionlink.URL(x.n.ConsoleURL, x.n.Name, actionlink.Sign(x.key, &a))})
		}
	}
	b, _ := json.Marshal(&out)
	return b
}

// ButtonValue is what a Slack button of a request carries back: the request and the
// answer. Slack signs the callback that holds it (the console checks); the person is
// whoever pressed it.
type ButtonValue struct {
	Request string          `json:"r"`
	Value   json.RawMessage `json:"v"`
	Label   string          `json:"l"`
}

// slackButtons is a Slack message about p with text (escaped already) and a button per
// action; a request with none (free text) is answered in the console.
func slackButtons(text string, p *wire.PendingRequest) []byte {
	blocks := []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil)}
	var buttons []slack.BlockElement
	for i, a := range actionlink.For(p) {
		value, _ := json.Marshal(&ButtonValue{Request: p.ID, Value: a.Value, Label: a.Label})
		if len(buttons) == slackMaxButtons || len(value) > slackValueBytes {
			continue // this one is answered in the console
		}
		b := slack.NewButtonBlockElement("agentmux-"+strconv.Itoa(i), string(value), slack.NewTextBlockObject(slack.PlainTextType, clip(a.Label, slackLabel), false, false))
		switch a.Label {
		case "Approve", "Yes":
			b = b.WithStyle(slack.StylePrimary)
		case "Deny", "No":
			b = b.WithStyle(slack.StyleDanger)
		}
		buttons = append(buttons, b)
	}
	if len(buttons) > 0 {
		blocks = append(blocks, slack.NewActionBlock("agentmux-"+p.ID, buttons...))
	}
	b, _ := json.Marshal(&slack.WebhookMessage{Text: text, Blocks: &slack.Blocks{BlockSet: blocks}})
	return b
}

// clip cuts s to n characters, marking the cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
