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
	var m Message
	var typ, id, options []byte
	var timeout *float64
	c := rawjson.NewCopy(obj) // the strings and raw values kept: parts of one copy
	str := c.String
	walked := rawjson.Fields(obj, func(key, value []byte) bool {
		switch string(key) {
		case "type":
			if typ != nil {
				return false // a duplicate: the full decoder reports it
			}
			typ = value
		case "id":
			if id != nil {
				return false
			}
			id = value
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
			options = value
		case "timeout_ms":
			if string(value) == "null" {
				timeout = nil
				return true
			}
			v, err := strconv.ParseFloat(string(value), 64)
			if err != nil || v < 0 {
				return false
			}
			timeout = &v
		case "chunk", "capabilities":
			return false // not a request's: the full decoder reads them
		default:
			return !foldsToKnown(key)
		}
		return true
	})
	if !walked {
		return nil, false
	}
	name, _, ok := rawjson.PlainString(typ, 0)
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
	if len(id) > 0 && id[0] == '"' {
		if m.ID, ok = c.Unquote(id); !ok {
			return nil, false
		}
	} else if m.ID, err = idString(id); err != nil {
		return nil, false
	}
	if timeout != nil {
		m.Timeout = int64(*timeout)
	}
	if options != nil && string(options) != "null" && !rawjson.Elements(options, func(raw []byte) bool {
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
	return &m, true
}
