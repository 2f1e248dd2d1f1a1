package integrations

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/agentmux/agentmux/actionlink"
	"github.com/agentmux/agentmux/internal/htmlpage"
	"github.com/agentmux/agentmux/wire"
)

// actPage is the page an action link opens: what it would do, and a button that does
// it; then what came of it.
type actPage struct {
	Title   string
	Problem string
	Pending *wire.PendingRequest
	Confirm bool
	Label   string
	Person  string
	Class   string // the button's: approve or deny
	Done    string
	Left    string // how long until the default
}

// action checks the link of r: the notify it names holds the key it was signed with.
// A refused one is counted against the address, as a wrong token is.
func (s *Server) action(w http.ResponseWriter, r *http.Request) (*actionlink.Action, bool) {
	key := s.actionKeys[r.PathValue("notify")]
	var a *actionlink.Action
	err := actionlink.ErrForged
	if key != nil {
		a, err = actionlink.Check(key, r.PathValue("token"), time.Now())
	}
	if err == nil {
		return a, true
	}
	s.cfg.Log.Warn("action link refused", "remote", r.RemoteAddr, "notify", r.PathValue("notify"), "err", err)
	code := http.StatusForbidden
	if s.cfg.Refused(r.RemoteAddr) {
		code = http.StatusTooManyRequests
	}
	s.actPage(w, code, &actPage{Title: "Link refused", Problem: err.Error()})
	return nil, false
}

// actConfirm shows what the link would do, and the button that does it: a link
// scanner that opens every URL of a mail decides nothing.
func (s *Server) actConfirm(w http.ResponseWriter, r *http.Request) {
	a, ok := s.action(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), answerTimeout)
	defer cancel()
	p, err := s.cfg.Pending(ctx, a.Request)
	if err != nil {
		s.actPage(w, http.StatusNotFound, &actPage{Title: "No such request", Problem: err.Error()})
		return
	}
	page := &actPage{Title: a.Label, Pending: p, Label: a.Label, Person: a.Person, Class: buttonClass(a.Label)}
	if p.State == wire.StatePending {
		page.Confirm = true
		page.Left = fmt.Sprintf("%v left, then the default %s", time.Until(p.Deadline).Round(time.Second), p.Default)
	} else {
		page.Done = settled(p)
	}
	s.actPage(w, http.StatusOK, page)
}

// act answers the request as the link's person, once they have confirmed.
func (s *Server) act(w http.ResponseWriter, r *http.Request) {
	a, ok := s.action(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), answerTimeout)
	defer cancel()
	reply, err := s.cfg.Answer(ctx, a.Person, a.Request, wire.RespondRequest{Value: a.Value, Reason: "from a notification's link"})
	if err != nil {
		s.actPage(w, http.StatusBadGateway, &actPage{Title: "Not answered", Problem: "the answer did not reach the fleet: " + err.Error()})
		return
	}
	s.cfg.Log.Info("answered from an action link", "request", a.Request, "as", a.Person, "ok", reply.OK, "code", reply.Code)
	page := &actPage{Title: a.Label, Pending: reply.Pending}
	switch {
	case reply.OK:
		page.Done = "Answered " + a.Label + " as " + a.Person + "."
	case reply.Pending != nil && reply.Code == wire.RespondAnswered:
		page.Problem, page.Done = "Not answered: this request had its answer already.", settled(reply.Pending)
	default:
		page.Problem = "Not answered: " + reply.Error
	}
	s.actPage(w, http.StatusOK, page)
}

func (s *Server) actPage(w http.ResponseWriter, code int, p *actPage) {
	var out htmlpage.Page
	out.Start(p.Title+" · agentmux", "login act", "")
	out.Para("error", "alert", p.Problem)
	if q := p.Pending; q != nil {
		out.Para("meta", "", q.Type+" · host "+q.Host+" · session "+q.Session)
		if _, n := htmlpage.Visible(q.Text); n > 0 {
			out.Para("error", "alert", fmt.Sprintf("The agent's text holds %d characters that hide or reorder what you read, each shown as ⟨U+…⟩: read it as marked.", n))
		}
		out.Markup(`  <pre class="text">`)
		out.Text(q.Text)
		out.Markup("</pre>\n")
	}
	out.Para("meta", "", p.Left)
	out.Para("done", "status", p.Done)
	if p.Confirm {
		out.Markup("  <p>Answer <strong>")
		out.Text(p.Label)
		out.Markup("</strong> as <strong>")
		out.Text(p.Person)
		out.Markup("</strong>? The audit records it as <code>human:")
		out.Text(p.Person)
		out.Markup(`</code>.</p>` + "\n" + `  <button type="submit" id="confirm" class="`)
		out.Text(p.Class)
		out.Markup(`">`)
		out.Text(p.Label)
		out.Markup("</button>\n")
	}
	out.Send(w, code)
}

// settled says how p ended.
func settled(p *wire.PendingRequest) string {
	switch p.State {
	case wire.StateAnswered, wire.StateDelivered:
		return "Answered " + string(p.Value) + " by " + p.Responder + "."
	case wire.StateCancelled:
		return "Cancelled: " + p.Cancelled
	}
	return "It is " + p.State + "."
}

func buttonClass(label string) string {
	switch label {
	case "Approve", "Yes":
		return "approve"
	case "Deny", "No":
		return "deny"
	}
	return "option"
}
