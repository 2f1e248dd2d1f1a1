package protocol

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"

	"github.com/agentmux/agentmux/internal/rawjson"
)

// StreamLine reports a line that is a progress, log or heartbeat message, as Decode
// would decode it, without decoding it: its type is all there is to take from one.
// raw is the line without surrounding spaces (the Raw Decode would give it), a part
// of line, not a copy. false for any other line, which Decode then decodes.
func StreamLine(line []byte) (t Type, raw []byte, ok bool) {
	if !utf8.Valid(line) {
		return "", nil, false
	}
	raw = bytes.TrimSpace(line)
	if len(raw) == 0 || raw[0] != '{' {
		return "", nil, false
	}
	if t, _, ok = scanFast(raw); !ok || t == TypePartial {
		return "", nil, false
	}
	return t, raw, true
}

// decodeFast decodes the high-volume stream messages (progress, log, heartbeat,
// partial) without reflection, the line cloned (see scanFast).
func decodeFast(obj []byte) (*Message, bool) {
	t, text, ok := scanFast(obj)
	if !ok {
		return nil, false
	}
	m := &Message{Type: t, Name: string(t), Raw: bytes.Clone(obj)}
	if text != nil && json.Unmarshal(text, &m.Text) != nil {
		return nil, false
	}
	return m, true
}

// scanFast reads a stream message (progress, log, heartbeat, partial) in one pass that
// checks the line and walks its top-level keys: its type, and a partial's text (or
// chunk) as raw JSON. It reports false for anything it does not handle the way the
// full decoder would, which then decides; the two agree on every line scanFast accepts
// (FuzzDecodeFast checks).
func scanFast(obj []byte) (t Type, text []byte, ok bool) {
	var typ, chunk []byte
	walked := rawjson.Fields(obj, func(key, value []byte) bool {
		switch string(key) {
		case "type":
			if typ != nil || !oneOf(value, TypeProgress, TypeLog, TypeHeartbeat, TypePartial) {
				return false // a duplicate (the full decoder reports it), or another type's line: no need to read on
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
		return "", nil, false // an escaped key, or a field the full decoder judges
	}
	name, _, ok := rawjson.PlainString(typ, 0)
	if !ok || len(typ) == 0 {
		return "", nil, false
	}
	switch Type(name) { // the constants, not copies of the name: a million lines a second make garbage of copies
	case TypeProgress:
		return TypeProgress, nil, true
	case TypeLog:
		return TypeLog, nil, true
	case TypeHeartbeat:
		return TypeHeartbeat, nil, true
	case TypePartial:
		if text == nil {
			text = chunk
		}
		if text != nil && text[0] != '"' {
			return "", nil, false
		}
		return TypePartial, text, true
	}
	return "", nil, false
}

// oneOf reports whether a type's raw value may be one of types: false only when it is a
// plain string that is none of them, so that a walk for some types stops at another's.
func oneOf(value []byte, types ...Type) bool {
	name, _, ok := rawjson.PlainString(value, 0)
	return !ok || slices.Contains(types, Type(name))
}

// foldsToKnown reports whether key is a field of the full decoder in other letter case
// ("tEXt"): encoding/json matches keys regardless of case, so the full decoder judges it.
func foldsToKnown(key []byte) bool {
	var lower [16]byte
	if len(key) > len(lower) {
		return slowFoldsToKnown(key)
	}
	for i, c := range key {
		if c >= utf8.RuneSelf {
			return slowFoldsToKnown(key) // Unicode folds too: "ſ" is "s", "K" (Kelvin) is "k"
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	return known(string(lower[:len(key)]))
}

// known reports the keys the full decoder reads, in lower case.
func known(key string) bool {
	switch key {
	case "type", "text", "chunk", "message", "context", "args", "default", "schema", "id", "question", "description",
		"risk_level", "tool", "kind", "multi", "options", "timeout_ms", "capabilities":
		return true
	}
	return false
}

// slowFoldsToKnown folds key as encoding/json does, Unicode included.
func slowFoldsToKnown(key []byte) bool {
	for _, name := range []string{"type", "text", "chunk", "message", "context", "args", "default", "schema", "id", "question",
		"description", "risk_level", "tool", "kind", "multi", "options", "timeout_ms", "capabilities"} {
		if bytes.EqualFold(key, []byte(name)) {
			return true
		}
	}
	return false
}

// typedField reports whether the full decoder gives key a Go type (and so may reject
// its value) or meaning (id).
func typedField(key []byte) bool {
	switch string(key) {
	case "id", "question", "description", "risk_level", "tool", "kind", "multi", "options", "timeout_ms", "capabilities":
		return true
	}
	return false
}
