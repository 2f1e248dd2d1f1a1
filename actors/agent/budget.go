package agent

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/wire"
)

// maxHeld bounds the requests a paused session keeps for its resume; one past it is
// answered at once with its default, saying why.
const maxHeld = 256

// budget is where a session stands against its budget. Reached, the session is
// paused: it gets no new input (its requests are held; a vendor's agent is interrupted
// at the end of its turn, an agent of the native protocol that declared "pause" is told
// so) while a request of type budget asks its supervisors whether it goes on.
type budget struct {
	limit, step config.Budget
	from        time.Time // the wall budget counts from here
	raises      int       // how often it was raised, in its run before it too
	paused      string    // the limits reached, in words: "" while the session runs
	asked       int       // budget requests made
	// ceiling is what the session may spend while its budget sets no usd ([budgets]
	// session_usd, raised by as much at each "yes" to a pause at it).
	ceiling float64
	// pausedAt is what the pause is for, and what a "yes" raises.
	pausedAt pauseKind
	// interrupted: the turn was interrupted for the pause, and its end (an error line)
	// is not the session's; stopped: it has ended, and going on takes a new turn.
	interrupted, stopped bool
	held                 []*protocol.Message // requests the agent made while paused
	raisedBy             string              // who raised it last: the next turn says so
}

// pauseKind is what a session was paused for.
type pauseKind int

const (
	pausedAtLimit   pauseKind = iota // its budget: a "yes" raises each limit by its step
	pausedAtCeiling                  // [budgets] session_usd: a "yes" raises the ceiling by as much
	pausedAtClaim                    // a runaway usage line: a "yes" lets it go on, the claim uncounted
)

// startBudget gives session s its budget, if it has one: the pipeline's or the host's.
func (a *Agent) startBudget(s *session) {
	b := s.start.Budget
	if b == nil {
		b = a.host.Budget
	}
	if b == nil {
		return
	}
	bs := a.ensureBudget(s)
	bs.limit, bs.step = *b, *b
	for range bs.raises {
		bs.limit = bs.limit.Raised(bs.step)
	}
	a.armWall(s)
	a.checkBudget(s) // its earlier attempts may have spent it all
}

// ensureBudget is session s's budget, made empty (no limits but the ceiling) for a
// session that has none when it is first checked or paused.
func (a *Agent) ensureBudget(s *session) *budget {
	if s.budget == nil {
		s.budget = &budget{from: s.begun, raises: s.start.Raises, ceiling: a.cfg.SessionUSD}
		if !s.start.BudgetFrom.IsZero() {
			s.budget.from = s.start.BudgetFrom
		}
	}
	return s.budget
}

// armWall arms the session's wall budget, if it has one, for when it falls due.
func (a *Agent) armWall(s *session) {
	if w := s.budget.limit.Wall.D(); w > 0 {
		s.timers = append(s.timers, a.after(max(w-time.Since(s.budget.from), 0), timerBudget, s.gen))
	}
}

// spent is what session s has spent: this attempt's spend, and with its earlier
// attempts', its cost and tokens.
func (a *Agent) spent(s *session) (*wire.Spend, float64, int64) {
	sp := s.usage.Spend(a.cfg.Pricing.Cost)
	var usd float64
	var tokens int64
	for _, x := range []*wire.Spend{sp, s.start.Spent, s.start.Retried} { // this attempt's, its run's earlier stages', its earlier attempts'
		if x != nil {
			usd, tokens = usd+x.CostUSD, tokens+x.Tokens()
		}
	}
	return sp, usd, tokens
}

// checkBudget pauses session s when it has reached its budget, or, while its budget
// sets no usd, the ceiling of what a session may spend.
func (a *Agent) checkBudget(s *session) {
	b := s.budget
	if (b == nil && a.cfg.SessionUSD == 0) || (b != nil && b.paused != "") || a.phase != phaseBusy || a.sess != s {
		return
	}
	sp, usd, tokens := a.spent(s)
	if b != nil {
		if why := b.limit.Exceeded(usd, tokens, time.Since(b.from)); why != "" {
			a.pause(s, pausedAtLimit, why, fmt.Sprintf("%s spent %s; go on with %s?", s.id, why, b.step.Step()), sp)
			return
		}
	}
	ceiling := a.cfg.SessionUSD
	if b != nil {
		ceiling = b.ceiling
	}
	if (b == nil || b.limit.USD == 0) && ceiling > 0 && usd >= ceiling {
		a.ensureBudget(s)
		why := fmt.Sprintf("$%.2f, the most a session without a usd budget may ($%s, [budgets] session_usd)", usd, wire.Dollars(ceiling))
		a.pause(s, pausedAtCeiling, why, fmt.Sprintf("%s spent %s; go on with +$%s?", s.id, why, wire.Dollars(a.cfg.SessionUSD)), sp)
	}
}

// runaway pauses session s for a usage line that claims more than one line may: the
// claim is not counted, and its supervisors are asked whether the session goes on, as
// at a budget (a session without one is given an empty one for the pause). Its host's
// other sessions and its day are untouched.
func (a *Agent) runaway(s *session, why string) {
	a.log.WarnContext(a.traceCtx(), "usage line refused: "+why, "session", s.id)
	if a.phase != phaseBusy || a.sess != s {
		return
	}
	if a.ensureBudget(s).paused != "" {
		return // already waiting on its supervisors; this claim is not counted either
	}
	sp, _, _ := a.spent(s)
	a.pause(s, pausedAtClaim, why, fmt.Sprintf("%s claimed %s; go on?", s.id, why), sp)
}

// pause stops session s at what kind says (why, in words) and asks its supervisors
// text: whether it goes on.
func (a *Agent) pause(s *session, kind pauseKind, why, text string, sp *wire.Spend) {
	b := s.budget
	b.paused, b.pausedAt = why, kind
	b.asked++
	id := fmt.Sprintf("budget-%d", b.asked)
	for n := 2; s.open[id] != nil; n++ { // the agent's own requests may have any id
		id = fmt.Sprintf("budget-%d-%d", b.asked, n)
	}
	switch {
	case a.dialect.Canonical():
		if a.caps["pause"] {
			a.proc.stdin.write(protocol.AppendPause(nil, "budget reached: "+why))
		}
	case a.caps["interrupt"]:
		a.proc.stdin.write(a.interruptLine("budget reached: " + why))
		b.interrupted = true
	}
	a.pass.Hold(fmt.Sprintf("session %s reached its budget (%s); its supervisors are asked whether it goes on, and its model calls wait", s.id, why))
	ev := &wire.SessionPaused{Reason: why, Request: id, Spend: sp, Budget: limits(b.limit)}
	a.publishOn(s, wire.EventSessionPaused, a.encode(ev))
	rec := a.record(s, wire.EventSessionPaused)
	rec.Request, rec.Type, rec.Text, rec.Reason, rec.Spend = id, string(protocol.TypeBudget), text, why, sp
	a.cfg.Audit(wire.AuditID(s.id, s.start.Attempt, id+".paused"), rec)
	a.log.InfoContext(a.traceCtx(), "session paused at its budget", "session", s.id, "spent", why)
	raw := a.encode(struct {
		Type        string      `json:"type"`
		ID          string      `json:"id"`
		Description string      `json:"description"`
		Spend       *wire.Spend `json:"spend,omitempty"`
		Budget      wire.Limits `json:"budget"`
		Raise       wire.Limits `json:"raise"`
	}{string(protocol.TypeBudget), id, text, sp, limits(b.limit), limits(b.step)})
	a.onRequest(s, &protocol.Message{Type: protocol.TypeBudget, Name: string(protocol.TypeBudget), ID: id, Description: text, Raw: raw})
}

// budgetAnswered acts on the answer to session s's budget request: "yes" raises the
// budget and the session goes on; anything else ends it, budget_exceeded.
func (a *Agent) budgetAnswered(s *session, value json.RawMessage, outcome protocol.Outcome, decider string) {
	if a.sess != s || outcome == protocol.OutcomeCancelled {
		return // the session is ending anyway
	}
	b := s.budget
	var v string
	if outcome == protocol.OutcomeAnswered && json.Unmarshal(value, &v) == nil && v == protocol.ApprovalYes {
		a.resume(s, decider)
		return
	}
	a.cfg.Metrics.BudgetPauses.WithLabelValues(a.host.Name, "exceeded").Inc()
	why := fmt.Sprintf("budget exceeded: spent %s; %s did not raise it", b.paused, decider)
	if outcome != protocol.OutcomeAnswered {
		why = fmt.Sprintf("budget exceeded: spent %s; no supervisor raised it (%s)", b.paused, outcome)
	}
	a.endSession(&Result{Error: why, BudgetExceeded: true}, false)
}

// resume raises session s's budget and lets it go on: a new turn after an interrupted
// one, a resume line after a pause line, and the requests it made meanwhile routed.
func (a *Agent) resume(s *session, decider string) {
	b := s.budget
	reason := "went on past a claim not counted"
	switch b.pausedAt {
	case pausedAtLimit:
		b.limit = b.limit.Raised(b.step)
		b.raises++
		reason = "budget raised " + b.step.Step()
	case pausedAtCeiling:
		b.ceiling += a.cfg.SessionUSD
		reason = "ceiling raised to $" + wire.Dollars(b.ceiling)
	}
	b.paused, b.raisedBy = "", decider
	a.pass.Hold("") // its model calls go on
	a.cfg.Metrics.BudgetPauses.WithLabelValues(a.host.Name, "raised").Inc()
	ev := &wire.SessionPaused{Reason: "budget raised by " + decider, Decider: decider, Budget: limits(b.limit)}
	a.publishOn(s, wire.EventSessionResumed, a.encode(ev))
	rec := a.record(s, wire.EventSessionResumed)
	rec.Decider, rec.Reason = decider, reason
	a.cfg.Audit(wire.AuditID(s.id, s.start.Attempt, fmt.Sprintf("budget-%d.resumed", b.asked)), rec)
	if a.phase == phaseBusy {
		switch {
		case b.stopped:
			a.goOn(s)
		case b.interrupted: // its turn's end goes on (turnEnded)
		case a.dialect.Canonical() && a.caps["pause"]:
			a.proc.stdin.write(protocol.AppendResume(nil, "budget raised by "+decider))
		}
	}
	a.armWall(s)
	held := b.held
	b.held = nil
	for _, m := range held {
		if a.sess != s || b.paused != "" {
			b.held = append(b.held, m) // paused again, or ended: endSession settles it
			continue
		}
		a.onRequest(s, m)
	}
	a.checkBudget(s)
}

// turnEnded takes the end of the turn interrupted for a pause: the session goes on
// once its budget is raised.
func (a *Agent) turnEnded(s *session) {
	b := s.budget
	b.interrupted = false
	if b.paused != "" {
		b.stopped = true
		return
	}
	a.goOn(s)
}

// goOn starts the turn after one interrupted for a pause.
func (a *Agent) goOn(s *session) {
	s.budget.stopped = false
	text := fmt.Sprintf("Your budget was raised (%s). Continue the task where you stopped.", s.budget.raisedBy)
	a.proc.stdin.write(a.dialect.Continue(tracedPrompt(s, protocol.Prompt{Text: text, Session: s.id})))
}

// hold keeps a request the agent made while its session is paused, for the resume.
// Past maxHeld, the request is answered with its default at once.
func (a *Agent) hold(s *session, msg *protocol.Message) {
	b := s.budget
	if len(b.held) < maxHeld {
		b.held = append(b.held, msg)
		return
	}
	p := a.newRequest(s, msg)
	a.cfg.Audit(p.audit+".request", a.requestRecord(s, p))
	a.respond(s, p, p.def, protocol.OutcomeDefaulted, "runtime",
		fmt.Sprintf("the session is paused at its budget with %d requests already held; its default", maxHeld))
}

// unhold settles the requests still held when session s ends or the agent withdraws
// one (id; "" settles all): each is recorded, and answered cancelled by decider.
func (a *Agent) unhold(s *session, id, decider, reason string) {
	b := s.budget
	if b == nil {
		return
	}
	kept := b.held[:0]
	for _, m := range b.held {
		if id != "" && m.ID != id {
			kept = append(kept, m)
			continue
		}
		p := a.newRequest(s, m)
		a.cfg.Audit(p.audit+".request", a.requestRecord(s, p))
		a.respond(s, p, nil, protocol.OutcomeCancelled, decider, reason)
	}
	b.held = kept
}

func limits(b config.Budget) wire.Limits {
	return wire.Limits{USD: b.USD, Tokens: b.Tokens, WallMS: b.Wall.D().Milliseconds()}
}

// encode is v as JSON; one that does not encode (a cost that is not a number) is
// logged, and stands as {}.
func (a *Agent) encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		a.log.Error("an event did not encode; sent as {}", "event", fmt.Sprintf("%T", v), "err", err)
		return []byte("{}")
	}
	return b
}
