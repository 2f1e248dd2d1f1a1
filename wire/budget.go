package wire

// SessionPaused is the session.paused and session.resumed events: why a session
// stopped or goes on, what it has spent, and its budget now.
type SessionPaused struct {
	Reason  string `json:"reason"`            // paused: the limits reached ("$5.02 of $5"); resumed: who raised it
	Request string `json:"request,omitempty"` // paused: the budget request its supervisors are asked
	Decider string `json:"decider,omitempty"` // resumed: who answered "yes"
	Spend   *Spend `json:"spend,omitempty"`
	Budget  Limits `json:"budget"`
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
