package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Type is a canonical message type.
type Type string

// The canonical message types of protocol.md.
const (
	TypeProgress  Type = "progress"
	TypeLog       Type = "log"
	TypePartial   Type = "partial"
	TypeHeartbeat Type = "heartbeat"
	TypeQuestion  Type = "question"
	TypeApproval  Type = "approval"
	TypeToolCall  Type = "tool_call"
	TypeResult    Type = "result"
	TypeError     Type = "error"
	TypeInitAck   Type = "init_ack"
	// TypeUnhandled stands for any type the protocol does not define; Message.Name keeps
	// what the agent wrote.
	TypeUnhandled Type = "listen:unhandled"
	// TypeWithdrawn is made by dialects, never decoded: the agent withdrew the request
	// ID (Claude Code's control_cancel_request); it ends cancelled and nothing is written.
	TypeWithdrawn Type = "listen:withdrawn"
	// TypeBudget is made by the runtime, never decoded: a session reached its budget and
	// is paused; the supervisors answer "yes" (raise it and go on) or "no" (end it).
	TypeBudget Type = "budget"
)

// IsRequest reports whether messages of type t need an answer.
func (t Type) IsRequest() bool {
	return t == TypeQuestion || t == TypeApproval || t == TypeToolCall || t == TypeBudget
}

// IsTerminal reports whether a message of type t ends the session.
func (t Type) IsTerminal() bool { return t == TypeResult || t == TypeError }

// PlainText says what a line that is not a JSON object with a string type becomes.
type PlainText int

const (
	// PlainTextResult makes such a line a result: {"type":"result","text":"<line>"}.
	PlainTextResult PlainText = iota
	// PlainTextLog makes such a line a log message: {"type":"log","level":"info","message":"<line>"}.
	PlainTextLog
)

// Question kinds. Any other kind is kept in the payload and treated as KindPrompt.
const (
	KindPrompt  = "prompt"
	KindConfirm = "confirm"
	KindSelect  = "select"
	KindCustom  = "custom"
)

var (
	// ErrInvalidUTF8 is returned for a line that is not valid UTF-8.
	ErrInvalidUTF8 = errors.New("protocol: line is not valid UTF-8")
	// ErrDuplicateKey is returned for an object that names "type" or "id" twice.
	ErrDuplicateKey = errors.New("protocol: object has a duplicate key")
)

// InvalidFrameError reports a line that looked like a JSON object but could not be used.
type InvalidFrameError struct {
	Reason string // bounded, for metrics labels: invalid_json, invalid_utf8, duplicate_key, bad_field
	Err    error
}

func (e *InvalidFrameError) Error() string { return "protocol: invalid frame: " + e.Err.Error() }
func (e *InvalidFrameError) Unwrap() error { return e.Err }

// Option is one choice offered by a question or approval.
type Option struct {
	Value       string `json:"value"`
	Label       string `json:"label,omitempty"`
	Description string `json:"description,omitempty"`
}

// Message is one decoded agent message. Raw always holds a JSON object (for plain-text
// lines, the synthesized one) that is the Message's own copy.
type Message struct {
	Type      Type
	Name      string // the type as sent; differs from Type only for TypeUnhandled
	ID        string // request id as sent; empty when the runtime assigns one
	Raw       []byte
	PlainText bool // Raw was synthesized from a plain-text line

	Text         string // result text; partial text (or Concerto's chunk)
	Message      string // the error's message (stream types keep theirs in Raw only)
	Question     string
	Context      string
	Description  string
	RiskLevel    string
	Tool         string
	Args         json.RawMessage
	Kind         string // question kind as sent; see EffectiveKind
	Multi        bool
	Options      []Option
	Default      json.RawMessage // the question's own default answer, if any
	Schema       json.RawMessage
	Timeout      int64 // timeout_ms, 0 when absent
	Capabilities []string
	Usage        *Usage          // a usage line's
	State        json.RawMessage // a checkpoint's
	RetryAfter   int64           // a limit's retry_after_ms
}

// EffectiveKind is the kind the answer is validated against.
func (m *Message) EffectiveKind() string {
	switch m.Kind {
	case KindConfirm, KindSelect, KindCustom:
		return m.Kind
	}
	return KindPrompt
}

// RequestText is the text routes match against: the question, the approval's
// description, or the tool's name.
func (m *Message) RequestText() string {
	switch m.Type {
	case TypeQuestion:
		return m.Question
	case TypeApproval, TypeBudget:
		return m.Description
	case TypeToolCall:
		return m.Tool
	}
	return ""
}

// wire is the shape Decode reads. Fields the runtime does not interpret stay in Raw.
type wire struct {
	Type         json.RawMessage   `json:"type"`
	ID           json.RawMessage   `json:"id"`
	Text         *string           `json:"text"`
	Chunk        *string           `json:"chunk"`
	Message      json.RawMessage   `json:"message"`
	Question     string            `json:"question"`
	Context      json.RawMessage   `json:"context"`
	Description  string            `json:"description"`
	RiskLevel    string            `json:"risk_level"`
	Tool         string            `json:"tool"`
	Args         json.RawMessage   `json:"args"`
	Kind         string            `json:"kind"`
	Multi        bool              `json:"multi"`
	Options      []json.RawMessage `json:"options"`
	Default      json.RawMessage   `json:"default"`
	Schema       json.RawMessage   `json:"schema"`
	TimeoutMS    *float64          `json:"timeout_ms"`
	Capabilities []string          `json:"capabilities"`
	State        json.RawMessage   `json:"state"` // a checkpoint's: read once, with the rest
}

// Decode turns one line into a Message. A line that is not a JSON object with a string
// "type" follows the plain-text rule; a line that starts like an object but is not valid
// JSON, is not UTF-8, or names "type" or "id" twice is an *InvalidFrameError.
func Decode(line []byte, plain PlainText) (*Message, error) {
	if !utf8.Valid(line) {
		return nil, &InvalidFrameError{Reason: "invalid_utf8", Err: ErrInvalidUTF8}
	}
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return plainMessage(line, plain), nil
	}
	if m, ok := decodeFast(trimmed); ok {
		return m, nil
	}
	if m, ok := decodeRequestFast(trimmed); ok {
		return m, nil
	}
	if m, ok := decodeCheckpointFast(trimmed); ok {
		return m, nil
	}
	var w wire
	err := json.Unmarshal(trimmed, &w)
	var typeErr *json.UnmarshalTypeError
	if err != nil && !errors.As(err, &typeErr) {
		return nil, &InvalidFrameError{Reason: "invalid_json", Err: err}
	}
	// encoding/json goes on after a type error, so w.Type is set either way.
	var name string
	if len(w.Type) == 0 || w.Type[0] != '"' || json.Unmarshal(w.Type, &name) != nil {
		return plainMessage(line, plain), nil
	}
	if typeErr != nil {
		return nil, &InvalidFrameError{Reason: "bad_field", Err: fmt.Errorf("field %q must be %s, not %s", typeErr.Field, typeErr.Type, typeErr.Value)}
	}
	if err := checkDuplicates(trimmed); err != nil {
		return nil, &InvalidFrameError{Reason: "duplicate_key", Err: err}
	}
	m := &Message{Type: canonical(name), Name: name, Raw: bytes.Clone(trimmed)}
	if err := m.fill(&w); err != nil {
		return nil, &InvalidFrameError{Reason: "bad_field", Err: err}
	}
	return m, nil
}

func canonical(name string) Type {
	switch t := Type(name); t {
	case TypeProgress, TypeLog, TypePartial, TypeHeartbeat, TypeQuestion, TypeApproval,
		TypeToolCall, TypeResult, TypeError, TypeInitAck, TypeUsage, TypeCheckpoint, TypeLimit:
		return t
	}
	return TypeUnhandled
}

func (m *Message) fill(w *wire) error {
	id, err := idString(w.ID)
	if err != nil {
		return err
	}
	m.ID = id
	switch {
	case w.Text != nil:
		m.Text = *w.Text
	case w.Chunk != nil:
		m.Text = *w.Chunk
	}
	m.Message = textOf(w.Message)
	m.Question = w.Question
	m.Context = textOf(w.Context)
	m.Description = w.Description
	m.RiskLevel = w.RiskLevel
	m.Tool = w.Tool
	m.Args = w.Args
	m.Kind = w.Kind
	m.Multi = w.Multi
	m.Default = w.Default
	m.Schema = w.Schema
	m.Capabilities = w.Capabilities
	if w.TimeoutMS != nil {
		if *w.TimeoutMS < 0 {
			return fmt.Errorf("timeout_ms must not be negative, got %v", *w.TimeoutMS)
		}
		m.Timeout = int64(*w.TimeoutMS)
	}
	for i, raw := range w.Options {
		o, err := decodeOption(raw)
		if err != nil {
			return fmt.Errorf("options[%d]: %w", i, err)
		}
		m.Options = append(m.Options, o)
	}
	if m.Type == TypeQuestion && m.Question == "" {
		return errors.New(`a question needs a non-empty "question" field`)
	}
	if m.Type == TypeToolCall && m.Tool == "" {
		return errors.New(`a tool_call needs a non-empty "tool" field`)
	}
	if m.Type == TypeUsage {
		u, err := ParseUsage(m.Raw)
		if err != nil {
			return err
		}
		m.Usage = u
	}
	if m.Type == TypeCheckpoint {
		state, err := checkpointState(w.State)
		if err != nil {
			return err
		}
		m.State = state
	}
	if m.Type == TypeLimit {
		wait, err := limitWait(m.Raw)
		if err != nil {
			return err
		}
		m.RetryAfter = wait
	}
	return nil
}

// idString accepts a string id, or a number, kept as its JSON text.
func idString(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("id: %w", err)
		}
		return s, nil
	}
	if _, err := strconv.ParseFloat(string(raw), 64); err == nil {
		return string(raw), nil
	}
	return "", fmt.Errorf("id must be a string or a number, not %s", raw)
}

// textOf returns a JSON string's value, or the compact JSON text of anything else.
func textOf(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

func decodeOption(raw json.RawMessage) (Option, error) {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return Option{Value: s}, err
	}
	var o struct {
		Value       json.RawMessage `json:"value"`
		Label       string          `json:"label"`
		Description string          `json:"description"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return Option{}, errors.New(`an option must be a string or {"value","label","description"}`)
	}
	v := textOf(o.Value)
	if v == "" {
		v = o.Label
	}
	if v == "" {
		return Option{}, errors.New(`an option object needs a "value" or a "label"`)
	}
	return Option{Value: v, Label: o.Label, Description: o.Description}, nil
}

// checkDuplicates rejects an object whose top level names "type" or "id" twice, which
// encoding/json would otherwise resolve silently to the last one. The scan only runs when
// one of those keys appears more than once in the text at all.
func checkDuplicates(obj []byte) error {
	if bytes.Count(obj, []byte(`"type"`)) < 2 && bytes.Count(obj, []byte(`"id"`)) < 2 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil { // '{'
		return err
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if (key == "type" || key == "id") && seen[key] {
			return fmt.Errorf("%w: %q", ErrDuplicateKey, key)
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	return nil
}

func plainMessage(line []byte, plain PlainText) *Message {
	text := string(line)
	if plain == PlainTextLog {
		raw, _ := json.Marshal(struct {
			Type    string `json:"type"`
			Level   string `json:"level"`
			Message string `json:"message"`
		}{"log", "info", text})
		return &Message{Type: TypeLog, Name: "log", Raw: raw, PlainText: true, Message: text}
	}
	raw, _ := json.Marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{"result", text})
	return &Message{Type: TypeResult, Name: "result", Raw: raw, PlainText: true, Text: text}
}

// WithID returns the message's Raw object with "id" set to id, for requests whose id the
// runtime assigned. When the agent sent an id, Raw is returned as it is.
func (m *Message) WithID(id string) []byte {
	if m.ID != "" {
		return m.Raw
	}
	quoted, _ := json.Marshal(id)
	out := make([]byte, 0, len(m.Raw)+len(quoted)+6)
	out = append(out, `{"id":`...)
	out = append(out, quoted...)
	rest := bytes.TrimSpace(m.Raw[1:])
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}

// RequestOf is the request body stands for, as the agent sent it; a request without a
// body (or with one that does not decode) is built from its type and text.
func RequestOf(body []byte, typ, text string) *Message {
	if len(body) > 0 {
		// The runtime's own requests (budget) are not the agent's to send: they do not
		// decode as requests, and are known by their type and text.
		if m, err := Decode(body, PlainTextResult); err == nil && m.Type == Type(typ) {
			return m
		}
	}
	return &Message{Type: Type(typ), Question: text, Description: text, Tool: text}
}
