package protocol

import (
	"encoding/json"
	"strings"

	"github.com/agentmux/agentmux/internal/rawjson"
)

// Outcome says how a request ended. Every request ends with exactly one.
type Outcome string

// The outcomes of protocol.md.
const (
	OutcomeAnswered  Outcome = "answered"  // a supervisor decided the value
	OutcomeDefaulted Outcome = "defaulted" // the value is the default: no route, no supervisor, or one declined or passed
	OutcomeTimedOut  Outcome = "timed_out" // the value is the default
	OutcomeCancelled Outcome = "cancelled" // the value is null: the session is ending
	OutcomeInvalid   Outcome = "invalid"   // a supervisor's answer failed validation; the value is the default
)

// Response is the runtime's answer to one request.
type Response struct {
	InReplyTo Type
	ID        string
	Value     json.RawMessage // nil is written as null
	Outcome   Outcome
	Reason    string // why, in the decider's words, or why the answer did not fit; omitted when empty
}

// AppendResponse appends r as one line, "\n" included. The value is compacted, so no
// answer can carry a line break into the agent's stdin.
func AppendResponse(dst []byte, r Response) []byte {
	dst = append(dst, `{"type":"response","in_reply_to":`...)
	dst = rawjson.AppendString(dst, string(r.InReplyTo))
	dst = append(dst, `,"id":`...)
	dst = rawjson.AppendString(dst, r.ID)
	dst = append(dst, `,"answer_to":`...)
	dst = rawjson.AppendString(dst, r.ID)
	dst = append(dst, `,"value":`...)
	dst = rawjson.AppendRaw(dst, r.Value)
	dst = append(dst, `,"outcome":`...)
	dst = rawjson.AppendString(dst, string(r.Outcome))
	if r.Reason != "" {
		dst = append(dst, `,"reason":`...)
		dst = rawjson.AppendString(dst, r.Reason)
	}
	return append(dst, "}\n"...)
}

// AppendInit appends the init line carrying the host's params.
func AppendInit(dst []byte, params json.RawMessage) []byte {
	dst = append(dst, `{"type":"init","params":`...)
	dst = rawjson.AppendRaw(dst, params)
	return append(dst, "}\n"...)
}

// AppendPrompt appends a session's prompt in the JSON input format.
func AppendPrompt(dst []byte, text, session string) []byte {
	dst = append(dst, `{"type":"prompt","text":`...)
	dst = rawjson.AppendString(dst, text)
	dst = append(dst, `,"session":`...)
	dst = rawjson.AppendString(dst, session)
	return append(dst, "}\n"...)
}

// Prompt is a prompt line with the fields only some prompts carry: the schema a
// result must fit and what was wrong with the last one (a typed result's new prompt),
// what an earlier attempt of the session did (a retry), and the W3C trace context of
// the session's span when the node traces, for the agent's own spans to join.
type Prompt struct {
	Type            string           `json:"type"` // "prompt"
	Text            string           `json:"text"`
	Session         string           `json:"session"`
	Schema          json.RawMessage  `json:"schema,omitempty"`
	SchemaError     string           `json:"schema_error,omitempty"`
	PreviousAttempt *PreviousAttempt `json:"previous_attempt,omitempty"`
	// Resume is the session's latest checkpoint, when it was brought back from one.
	Resume      *Resume `json:"resume,omitempty"`
	Traceparent string  `json:"traceparent,omitempty"`
	Tracestate  string  `json:"tracestate,omitempty"`
}

// Resume is what a prompt carries for a session brought back on another node from
// its latest checkpoint: the state the agent kept there, which checkpoint, where and
// in which attempt it was taken, and a word for the agent.
type Resume struct {
	Checkpoint int             `json:"checkpoint"`
	Node       string          `json:"node"`
	Attempt    int             `json:"attempt"`
	State      json.RawMessage `json:"state"`
	Note       string          `json:"note"`
}

// PreviousAttempt is what the attempts of a session before this one did: how the last
// one failed, and the requests they had answered.
type PreviousAttempt struct {
	Attempt  int           `json:"attempt"`
	Error    string        `json:"error"`
	Requests []PriorAnswer `json:"requests,omitempty"`
}

// PriorAnswer is a request an earlier attempt had answered.
type PriorAnswer struct {
	Attempt int             `json:"attempt"`
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Value   json.RawMessage `json:"value"`
	Decider string          `json:"decider"`
}

// Find returns the answer an earlier attempt had for a request of type typ and text.
func (p *PreviousAttempt) Find(typ, text string) *PriorAnswer {
	if p == nil {
		return nil
	}
	for i := range p.Requests {
		if r := &p.Requests[i]; r.Type == typ && r.Text == text {
			return r
		}
	}
	return nil
}

// AppendPromptWith appends p in the JSON input format.
func AppendPromptWith(dst []byte, p Prompt) []byte {
	p.Type = "prompt"
	b, _ := json.Marshal(&p) // strings and valid JSON always marshal
	return append(append(dst, b...), '\n')
}

// AppendPromptText appends a prompt in the text input format: one raw line, with the
// prompt's own line breaks sent as spaces.
func AppendPromptText(dst []byte, text string) []byte {
	text = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(text)
	return append(append(dst, text...), '\n')
}

// AppendMessageLine appends a mid-session message for agents that declared "message".
func AppendMessageLine(dst []byte, text string) []byte {
	dst = append(dst, `{"type":"message","text":`...)
	dst = rawjson.AppendString(dst, text)
	return append(dst, "}\n"...)
}

// AppendPause appends a pause for agents that declared "pause": the session reached
// its budget; the agent stops before its next model call and waits for a resume.
func AppendPause(dst []byte, reason string) []byte {
	dst = append(dst, `{"type":"pause","reason":`...)
	dst = rawjson.AppendString(dst, reason)
	return append(dst, "}\n"...)
}

// AppendResume appends a resume after a pause: the budget was raised.
func AppendResume(dst []byte, reason string) []byte {
	dst = append(dst, `{"type":"resume","reason":`...)
	dst = rawjson.AppendString(dst, reason)
	return append(dst, "}\n"...)
}

// AppendInterrupt appends an interrupt for agents that declared "interrupt".
func AppendInterrupt(dst []byte, reason string) []byte {
	dst = append(dst, `{"type":"interrupt","reason":`...)
	dst = rawjson.AppendString(dst, reason)
	return append(dst, "}\n"...)
}
