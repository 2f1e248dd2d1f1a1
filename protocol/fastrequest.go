package protocol

import (
	"encoding/json"
	"strconv"

	"github.com/agentmux/agentmux/internal/rawjson"
)

// decodeRequestFast decodes a question, approval or tool call without reflection in the
// plain case: one pass that checks the line and walks its top-level keys, strings and
// numbers read as they are, options decoded as the full decoder decodes them. It reports
// false for anything it does not read exactly as the full decoder would (an escaped or
// folded key, a value of the wrong type, a duplicate type or id, a field the request
// lacks), which the full decoder then judges; the two agree on every line it accepts
// (FuzzDecodeFast checks).
func decodeRequestFast(obj []byte) (*Message, bool) {
	r := fastRequest{m: &Message{}, c: rawjson.NewCopy(obj)}
	if !rawjson.Fields(obj, r.field) {
		return nil, false
	}
	return r.message(obj)
}

// fastRequest is a request read by the fast path: its message, filled field by field
// from parts of one copy of the line, and the fields kept to be read last.
type fastRequest struct {
	m                *Message
	c                rawjson.Copy
	typ, id, options []byte
	timeout          *float64
}

// field reads one field of the request; false hands the line to the full decoder.
func (r *fastRequest) field(key, value []byte) bool {
	m, str := r.m, r.c.String
	switch string(key) {
	case "type":
		if r.typ != nil || !oneOf(value, TypeQuestion, TypeApproval, TypeToolCall) {
			return false // a duplicate (the full decoder reports it), or not a request
		}
		r.typ = value
	case "id":
		if r.id != nil {
			return false
		}
		r.id = value
	case "text":
		return string(value) != "null" && str(value, &m.Text)
	case "question":
		return str(value, &m.Question)
	case "description":
		return str(value, &m.Description)
	case "risk_level":
		return str(value, &m.RiskLevel)
	case "tool":
		return str(value, &m.Tool)
	case "kind":
		return str(value, &m.Kind)
	case "message":
		m.Message = textOf(value)
	case "context":
		m.Context = textOf(value)
	case "args":
		m.Args = value
	case "default":
		m.Default = value
	case "schema":
		m.Schema = value
	case "multi":
		switch string(value) {
		case "true":
			m.Multi = true
		case "false":
			m.Multi = false
		case "null": // leaves it as it is, as encoding/json does
		default:
			return false
		}
	case "options":
		r.options = value
	case "timeout_ms":
		if string(value) == "null" {
			r.timeout = nil
			return true
		}
		v, err := strconv.ParseFloat(string(value), 64)
		if err != nil || v < 0 {
			return false
		}
		r.timeout = &v
	case "chunk", "capabilities":
		return false // not a request's: the full decoder reads them
	default:
		return !foldsToKnown(key)
	}
	return true
}

// message makes the message of the fields read: its type, id, options and timeout,
// and its raw values as parts of the copy.
func (r *fastRequest) message(obj []byte) (*Message, bool) {
	m, c := r.m, &r.c
	name, _, ok := rawjson.PlainString(r.typ, 0)
	if !ok {
		return nil, false
	}
	switch Type(name) { // the constants, not copies of the name
	case TypeQuestion:
		m.Type = TypeQuestion
	case TypeApproval:
		m.Type = TypeApproval
	case TypeToolCall:
		m.Type = TypeToolCall
	default:
		return nil, false
	}
	m.Name = string(m.Type)
	var err error
	if len(r.id) > 0 && r.id[0] == '"' {
		if m.ID, ok = c.Unquote(r.id); !ok {
			return nil, false
		}
	} else if m.ID, err = idString(r.id); err != nil {
		return nil, false
	}
	if r.timeout != nil {
		m.Timeout = int64(*r.timeout)
	}
	if r.options != nil && string(r.options) != "null" && !rawjson.Elements(r.options, func(raw []byte) bool {
		o := Option{}
		if s, ok := c.Unquote(raw); ok {
			o.Value = s
		} else if o, err = decodeOption(raw); err != nil {
			return false
		}
		m.Options = append(m.Options, o)
		return true
	}) {
		return nil, false
	}
	if m.Type == TypeQuestion && m.Question == "" || m.Type == TypeToolCall && m.Tool == "" {
		return nil, false // the full decoder says what is missing
	}
	m.Raw = c.Raw(obj)
	// Raw JSON fields point into the message's own copy, as the full decoder's do.
	for _, f := range []*json.RawMessage{&m.Args, &m.Default, &m.Schema} {
		if *f != nil {
			*f = c.Raw(*f)
		}
	}
	return m, true
}
