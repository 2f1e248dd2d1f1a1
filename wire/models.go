package wire

import (
	"encoding/json"
	"strings"

	"github.com/agentmux/agentmux/protocol"
)

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

// ExchangeStream keeps the model calls' requests and answers when [gateway] record is
// "full", for the audit's max_age and max_bytes: operators alone may read it.
const ExchangeStream = "AGENTMUX_EXCHANGES"

const exchangePrefix = "agentmux.exchange."

// ExchangeSubjects are the subjects of every session's exchanges.
const ExchangeSubjects = exchangePrefix + ">"

// ExchangeSubject is where the exchanges of one session are kept.
func ExchangeSubject(host, session string) string { return exchangePrefix + host + "." + session }

// ParseExchangeSubject splits an exchange's subject into its host and session.
func ParseExchangeSubject(subject string) (host, session string, ok bool) {
	rest, ok := strings.CutPrefix(subject, exchangePrefix)
	if !ok {
		return "", "", false
	}
	host, session, ok = strings.Cut(rest, ".")
	return host, session, ok && isToken(host) && isToken(session)
}

// ModelExchange is one model call's request and answer as they passed through the
// gateway (an answer streamed as its events came), with the connection's key and the
// agent's token cut out. Its audit record (kind model.call) has the same ID.
type ModelExchange struct {
	ID      string    `json:"id"`
	Time    int64     `json:"time"` // unix milliseconds, as the call ended
	Node    string    `json:"node"`
	Host    string    `json:"host"`
	Session string    `json:"session"`
	Attempt int       `json:"attempt"`
	Call    ModelCall `json:"call"`
	Method  string    `json:"method"`
	Path    string    `json:"path"` // the provider's path
	// Request and Response are as sent and answered, up to what is kept; their Bytes are
	// their whole lengths, and Cut says they were longer than kept.
	Request       string `json:"request"`
	Response      string `json:"response"`
	RequestBytes  int64  `json:"request_bytes"`
	ResponseBytes int64  `json:"response_bytes"`
	RequestCut    bool   `json:"request_cut,omitempty"`
	ResponseCut   bool   `json:"response_cut,omitempty"`
}

// Fit cuts the request and the answer to room bytes together, keeping as much of each
// as the other leaves.
func (x *ModelExchange) Fit(room int) {
	req, resp := len(x.Request), len(x.Response)
	if req+resp <= room {
		return
	}
	half := max(room, 0) / 2
	switch {
	case req <= half:
		resp = room - req
	case resp <= half:
		req = room - resp
	default:
		req, resp = half, half
	}
	x.RequestCut = x.RequestCut || req < len(x.Request)
	x.ResponseCut = x.ResponseCut || resp < len(x.Response)
	x.Request, x.Response = strings.ToValidUTF8(x.Request[:req], ""), strings.ToValidUTF8(x.Response[:resp], "")
}

// AppendJSON appends the exchange as JSON of at most limit bytes: its bodies cut as
// much as it takes (Fit), JSON's escapes counted.
func (x *ModelExchange) AppendJSON(b []byte, limit int) []byte {
	for {
		data, _ := json.Marshal(x)
		room := len(x.Request) + len(x.Response)
		if len(data) <= limit || room == 0 {
			return append(b, data...)
		}
		// Cut in proportion: the JSON escapes the bodies' text as much again.
		x.Fit(max(int(int64(room)*int64(limit-1024)/int64(len(data))), 0))
	}
}
