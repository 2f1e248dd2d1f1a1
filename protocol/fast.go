package protocol

import (
	"bytes"
	"encoding/json"
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
	i := skipSpace(obj, 1)
	for i < len(obj) && obj[i] != '}' {
		key, next, ok := plainString(obj, i)
		if !ok {
			return nil, false // an escaped key: let the full decoder judge it
		}
		i = skipSpace(obj, next)
		i = skipSpace(obj, i+1) // ':'
		end := skipValue(obj, i)
		value := obj[i:end]
		switch string(key) {
		case "type":
			if typ != nil {
				return nil, false // a duplicate: the full decoder reports it
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
				return nil, false
			}
		}
		i = skipSpace(obj, end)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	name, _, ok := plainString(typ, 0)
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

// plainString returns the contents of the JSON string at b[i], when it holds no escape.
func plainString(b []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	end := bytes.IndexByte(b[i+1:], '"')
	if end < 0 {
		return nil, i, false
	}
	s = b[i+1 : i+1+end]
	if bytes.IndexByte(s, '\\') >= 0 {
		return nil, i, false
	}
	return s, i + end + 2, true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the (valid) JSON value at b[i].
func skipValue(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			i++
			for i < len(b) && b[i] != '"' {
				if b[i] == '\\' {
					i++
				}
				i++
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i // the end of the enclosing object
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case ',':
			if depth == 0 {
				return i
			}
		case ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}
