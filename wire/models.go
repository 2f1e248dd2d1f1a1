package wire

import "github.com/agentmux/agentmux/protocol"

// EventModelCall: a model call an agent made through its node's gateway, as the
// provider answered it (ModelCall). Its usage is what the session spent.
const EventModelCall = "model.call"

// ModelCall is the payload of a model.call event.
type ModelCall struct {
	Connection string `json:"connection"`
	Model      string `json:"model"`
	// Status is the provider's HTTP status; 0 when the gateway did not reach it.
	Status int `json:"status"`
	// Usage is what the provider counted (nil: its answer gave none, as an error's).
	Usage  *protocol.Usage `json:"usage,omitempty"`
	TookMs int64           `json:"took_ms"`
	// Finish is why the answer ended, as the provider said (end_turn, tool_use, stop…).
	Finish []string `json:"finish,omitempty"`
	// RetryAfterMs is the wait a provider asked for with a 429, 503 or 529.
	RetryAfterMs int64 `json:"retry_after_ms,omitempty"`
	// Lost: part of the answer was too large to read for its usage, which is then less
	// than the provider counted.
	Lost bool `json:"lost,omitempty"`
}
