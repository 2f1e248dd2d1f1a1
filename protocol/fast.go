package protocol

import (
	"bytes"
	"encoding/json"

	"github.com/agentmux/agentmux/internal/rawjson"
)

// decodeFast decodes the high-volume stream messages (progress, log, heartbeat,
// partial) without reflection: one validity check, one scan of the top-level keys, the
// line cloned. It reports false for anything it does not handle the way the full
// decoder would, which then decides; the two agree on every line decodeFast accepts
// (FuzzDecodeFast checks).
func decodeFast(obj []byte) (*Message, bool) {
	if !json.Valid(obj) {
		return nil, false
	}
	var typ, text, chunk []byte
	walked := rawjson.Fields(obj, func(key, value []byte) bool {
		switch string(key) {
		case "type":
			if typ != nil {
				return false // a duplicate: the full decoder reports it
			}
			typ = value
		case "text":
			text = value
		case "chunk":
			chunk = value
		case "message", "context", "args", "default", "schema":
			// Kept as raw JSON by the full decoder too; message matters for errors only.
		default:
			if typedField(key) || foldsToKnown(key) {
				return false
			}
		}
		return true
	})
	if !walked {
		return nil, false // an escaped key, or a field the full decoder judges
	}
	name, _, ok := rawjson.PlainString(typ, 0)
	if !ok || len(typ) == 0 {
		return nil, false
	}
	m := &Message{Type: Type(name), Name: string(name)}
	switch m.Type {
	case TypeProgress, TypeLog, TypeHeartbeat:
	case TypePartial:
		s := text
		if s == nil {
			s = chunk
		}
		if s != nil {
			if s[0] != '"' || json.Unmarshal(s, &m.Text) != nil {
				return nil, false
			}
		}
	default:
		return nil, false
	}
	m.Raw = bytes.Clone(obj)
	return m, true
}

// typedField reports whether the full decoder gives key a Go type (and so may reject
// its value) or meaning (id).
// foldsToKnown reports whether key is a field of the full decoder in other letter case
// ("tEXt"): encoding/json matches keys regardless of case, so the full decoder judges it.
func foldsToKnown(key []byte) bool {
	for _, name := range []string{"type", "text", "chunk", "message", "context", "args", "default", "schema",
		"id", "question", "description", "risk_level", "tool", "kind", "multi", "options", "timeout_ms", "capabilities"} {
		if bytes.EqualFold(key, []byte(name)) {
			return true
		}
	}
	return false
}

func typedField(key []byte) bool {
	switch string(key) {
	case "id", "question", "description", "risk_level", "tool", "kind", "multi", "options", "timeout_ms", "capabilities":
		return true
	}
	return false
}
