package wire

import (
	"fmt"
	"math"
)

// SessionPaused is the session.paused and session.resumed events: why a session
// stopped or goes on, what it has spent, and its budget now.
type SessionPaused struct {
	Reason  string `json:"reason"`            // paused: the limits reached ("$5.02 of $5"); resumed: who raised it
	Request string `json:"request,omitempty"` // paused: the budget request its supervisors are asked
	Decider string `json:"decider,omitempty"` // resumed: who answered "yes"
	Spend   *Spend `json:"spend,omitempty"`
	Budget  Limits `json:"budget"`
	// Checkpoint, resumed: the checkpoint a session brought back on another node goes
	// on from (its Reason says where it was taken); paused at a usage limit: the one it
	// goes on from at Until (unix milliseconds).
	Checkpoint int   `json:"checkpoint,omitempty"`
	Until      int64 `json:"until,omitempty"`
}

// Limits is a session's budget as events and the audit give it; a zero field is no
// limit.
type Limits struct {
	USD    float64 `json:"usd,omitempty"`
	Tokens int64   `json:"tokens,omitempty"`
	WallMS int64   `json:"wall_ms,omitempty"`
}

// OutcomeBudgetExceeded is the outcome of a session ended at its budget: its
// supervisors answered "no" to going on, or did not answer in time.
const OutcomeBudgetExceeded = "budget_exceeded"

const budgetRaisePrefix = "agentmux.budget.raise."

// BudgetRaiseSubject is where the person name raises host's daily budget for today
// (BudgetRaise): one node takes it (queue group), adds it to the host's day in the
// spend bucket and answers (BudgetRaiseReply). Only that user may publish there, so
// the node records who raised it from the subject.
func BudgetRaiseSubject(host, name string) string {
	return personSubject(budgetRaisePrefix, host, name)
}

// BudgetRaiseSubjects matches every raise of every host's daily budget.
const BudgetRaiseSubjects = budgetRaisePrefix + "*.*"

// ParseBudgetRaiseSubject splits a raise's subject into the host and the person.
func ParseBudgetRaiseSubject(subject string) (host, name string, ok bool) {
	return parsePersonSubject(subject, budgetRaisePrefix)
}

// BudgetRaise raises a host's daily budget for today by USD, or, with Reset, releases
// what its sessions spent so far today, whatever it came to: the host has its whole
// daily budget again.
type BudgetRaise struct {
	USD   float64 `json:"usd,omitempty"`
	Reset bool    `json:"reset,omitempty"`
	Note  string  `json:"note,omitempty"`
}

// MaxRaiseUSD is the most one raise may add to a host's day.
const MaxRaiseUSD = 1e9

// Check says what is wrong with the raise's amount, if anything.
func (r *BudgetRaise) Check() error {
	if r.Reset {
		if r.USD != 0 {
			return fmt.Errorf("%v: a reset releases what was spent, it takes no amount", r.USD)
		}
		return nil
	}
	if r.USD <= 0 || math.IsNaN(r.USD) || math.IsInf(r.USD, 0) || r.USD > MaxRaiseUSD {
		return fmt.Errorf("%v: give the US dollars to raise it by, more than 0 (and at most %g)", r.USD, MaxRaiseUSD)
	}
	return nil
}

// BudgetRaiseReply is the host's day after a raise, or why it was refused.
type BudgetRaiseReply struct {
	Node  string      `json:"node,omitempty"`
	Day   *DailySpend `json:"day,omitempty"`
	Limit float64     `json:"limit_usd,omitempty"` // the day's budget now: [budgets.daily] and the raises
	Error string      `json:"error,omitempty"`
}
