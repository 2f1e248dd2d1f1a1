package wire

// The payloads of the control requests a node answers on agentmux.ctl.<node>.<verb>.

// SessionInfo is one running or queued session, as the list verb reports it.
type SessionInfo struct {
	Session string  `json:"session"`
	Host    string  `json:"host"`
	Task    string  `json:"task,omitempty"`
	State   string  `json:"state"` // running or queued
	Attempt int     `json:"attempt"`
	AgeMS   float64 `json:"age_ms"`
}

// DrainReply says what a drain did.
type DrainReply struct {
	OK         bool   `json:"ok"`
	Effect     string `json:"effect,omitempty"`
	Running    int    `json:"running"`     // sessions left to finish within the grace
	HandedBack int    `json:"handed_back"` // queued tasks returned to the work queue
}

// Delivery answers an interrupt or a message to a session: whether it reached the
// agent, and what it did.
type Delivery struct {
	OK     bool   `json:"ok"`
	Effect string `json:"effect,omitempty"`
	Error  string `json:"error,omitempty"`
}
