package integrations

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/slack-go/slack"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/notify"
	"github.com/agentmux/agentmux/wire"
)

// maxSlackBody bounds an interactivity callback (Slack's are a few KiB).
const maxSlackBody = 256 << 10

// slackApp is what the console needs of a [notify.X] whose Slack messages carry
// buttons: the app's signing secret, and who each Slack user is.
type slackApp struct {
	notify *config.Notify
	secret string
	client *http.Client // for response_url: reaches no private address unless allow_private
}

// slackAction takes a button pressed in Slack (the app's interactivity request URL is
// the console's /slack/<notify>): it checks Slack's signature with the app's signing
// secret, acknowledges at once (Slack waits 3 s), then answers as the person the
// Slack user is mapped to and replaces the message with who decided.
func (s *Server) slackAction(w http.ResponseWriter, r *http.Request) {
	app := s.slack[r.PathValue("notify")]
	if app == nil {
		errorf(w, http.StatusNotFound, "no [notify.%s] with Slack buttons", r.PathValue("notify"))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxSlackBody))
	if err != nil {
		errorf(w, http.StatusBadRequest, "read the callback: %v", err)
		return
	}
	sv, err := slack.NewSecretsVerifier(r.Header, app.secret)
	if err == nil {
		_, _ = sv.Write(body)
		err = sv.Ensure()
	}
	if err != nil {
		s.cfg.Log.Warn("a Slack callback without Slack's signature refused", "notify", app.notify.Name, "remote", r.RemoteAddr, "err", err)
		errorf(w, http.StatusUnauthorized, "not signed by Slack with this app's signing secret")
		return
	}
	form, err := url.ParseQuery(string(body))
	var cb slack.InteractionCallback
	if err == nil {
		err = json.Unmarshal([]byte(form.Get("payload")), &cb)
	}
	if err != nil || cb.Type != slack.InteractionTypeBlockActions || len(cb.ActionCallback.BlockActions) != 1 {
		errorf(w, http.StatusBadRequest, "not a block_actions callback of one button")
		return
	}
	var press notify.ButtonValue
	if err := json.Unmarshal([]byte(cb.ActionCallback.BlockActions[0].Value), &press); err != nil || press.Request == "" || len(press.Value) == 0 {
		errorf(w, http.StatusBadRequest, "not a button of agentmux")
		return
	}
	w.WriteHeader(http.StatusOK) // Slack's answer; what came of it goes to response_url
	s.bg.Go(func() { s.slackAnswer(app, &cb, &press) })
}

// slackAnswer answers as the person the Slack user is, and tells Slack what came of it.
func (s *Server) slackAnswer(app *slackApp, cb *slack.InteractionCallback, press *notify.ButtonValue) {
	ctx, cancel := context.WithTimeout(context.Background(), answerTimeout+app.notify.Timeout.D())
	defer cancel()
	person, known := app.notify.Users[cb.User.ID]
	if !known {
		s.cfg.Log.Warn("a Slack user not in users pressed a button", "notify", app.notify.Name, "slack_user", cb.User.ID, "request", press.Request)
		s.slackReply(ctx, app, cb, &slack.WebhookMessage{ResponseType: slack.ResponseTypeEphemeral,
			Text: fmt.Sprintf("Not answered: your Slack user %s is not one of [notify.%s] users, so agentmux does not know who you are.", cb.User.ID, app.notify.Name)})
		return
	}
	reply, err := s.cfg.Answer(ctx, person, press.Request, wire.RespondRequest{Value: press.Value, Reason: "from Slack"})
	var line string
	switch {
	case err != nil:
		s.cfg.Log.Warn("a Slack answer did not reach the fleet", "request", press.Request, "as", person, "err", err)
		s.slackReply(ctx, app, cb, &slack.WebhookMessage{ResponseType: slack.ResponseTypeEphemeral, Text: "Not answered: the answer did not reach the fleet (" + err.Error() + ")."})
		return
	case reply.OK:
		line = fmt.Sprintf("%s by %s (human:%s)", press.Label, person, person)
	case reply.Pending != nil && reply.Code == wire.RespondAnswered:
		line = fmt.Sprintf("Answered %s by %s (human:%s) before %s pressed %s", reply.Pending.Value, reply.Pending.Responder, reply.Pending.Responder, person, press.Label)
	default:
		s.slackReply(ctx, app, cb, &slack.WebhookMessage{ResponseType: slack.ResponseTypeEphemeral, Text: "Not answered: " + reply.Error})
		return
	}
	s.cfg.Log.Info("answered from Slack", "request", press.Request, "as", person, "ok", reply.OK, "code", reply.Code)
	// The message, its buttons gone, with who decided.
	text := cb.Message.Text
	decided := slack.NewContextBlock("agentmux-decided", slack.NewTextBlockObject(slack.MarkdownType, notify.SlackEscape(line), false, false))
	s.slackReply(ctx, app, cb, &slack.WebhookMessage{ReplaceOriginal: true, Text: text + "\n" + notify.SlackEscape(line),
		Blocks: &slack.Blocks{BlockSet: []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil), decided}}})
}

// slackReply posts msg to the callback's response_url, which must be Slack's own
// unless the notify allows private addresses (a stand-in on this machine).
func (s *Server) slackReply(ctx context.Context, app *slackApp, cb *slack.InteractionCallback, msg *slack.WebhookMessage) {
	u, err := url.Parse(cb.ResponseURL)
	if err != nil || (!app.notify.AllowPrivate && (u.Scheme != "https" || !strings.HasSuffix(u.Hostname(), ".slack.com"))) {
		s.cfg.Log.Warn("a Slack callback's response_url is not Slack's; not posted", "notify", app.notify.Name)
		return
	}
	if err := slack.PostWebhookCustomHTTPContext(ctx, cb.ResponseURL, app.client, msg); err != nil {
		s.cfg.Log.Warn("tell Slack what came of a button", "notify", app.notify.Name, "err", err)
	}
}
