package agent

import (
	"fmt"
	"time"

	"github.com/agentmux/agentmux/wire"
)

func (a *Agent) onSessionTimer(m *timerFired) {
	s := a.sess
	if s == nil || s.gen != m.gen {
		return
	}
	switch m.kind {
	case timerSession:
		a.timeOut(fmt.Sprintf("session timed out after %v", a.host.Timeout.D()))
	case timerBudget:
		a.checkBudget(s)
	case timerIdle:
		idle := a.host.IdleTimeout.D()
		if s.budget != nil && s.budget.paused != "" {
			s.timers = append(s.timers, a.after(idle, timerIdle, s.gen)) // waiting on its budget, not idle
			return
		}
		last := s.lastLine
		if s.sink != nil {
			if direct := time.Unix(0, s.sink.lastLine.Load()); direct.After(last) {
				last = direct // the reader published the last line itself
			}
		}
		if quiet := time.Since(last); quiet < idle {
			s.timers = append(s.timers, a.after(idle-quiet, timerIdle, s.gen))
			return
		}
		a.timeOut(fmt.Sprintf("session timed out after %v without output", idle))
	case timerInterrupt:
		a.endSession(&Result{Error: "session interrupted: the agent did not stop in time"}, false)
	}
}

// timeOut ends the session on a timer: interrupt, then stop the process.
func (a *Agent) timeOut(text string) {
	if a.caps["interrupt"] {
		a.proc.stdin.write(a.interruptLine(text))
	}
	a.endSession(&Result{Error: text}, false)
}

func (a *Agent) interrupt(reason string) *wire.Delivery {
	s := a.sess
	if s == nil {
		return &wire.Delivery{Error: "the session has already ended"}
	}
	if a.caps["interrupt"] && a.phase == phaseBusy {
		a.proc.stdin.write(a.interruptLine(reason))
		s.timers = append(s.timers, a.after(a.host.StopGrace.D(), timerInterrupt, s.gen))
		return &wire.Delivery{OK: true, Effect: fmt.Sprintf("interrupt written; the agent has %v to end the session", a.host.StopGrace.D())}
	}
	a.endSession(&Result{Error: "session interrupted: " + reason}, false)
	return &wire.Delivery{OK: true, Effect: "the agent did not declare interrupt: session ended and process stopped"}
}

func (a *Agent) sendMessage(text string) *wire.Delivery {
	switch {
	case a.sess == nil:
		return &wire.Delivery{Error: "the session has already ended"}
	case a.phase != phaseBusy:
		return &wire.Delivery{Error: "the agent process has exited; its session is ending"}
	case a.sess.budget != nil && a.sess.budget.paused != "":
		return &wire.Delivery{Error: "the session is paused at its budget (" + a.sess.budget.paused + "); it takes messages again once its budget is raised"}
	case !a.caps["message"]:
		return &wire.Delivery{Error: fmt.Sprintf("host '%s' did not declare the message capability in init_ack; its agent cannot take messages", a.host.Name)}
	}
	a.proc.stdin.write(a.dialect.Message(text))
	return &wire.Delivery{OK: true, Effect: "message written"}
}

func (a *Agent) interruptLine(reason string) []byte { return a.dialect.Interrupt(reason) }
