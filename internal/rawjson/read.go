package rawjson

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// maxDepth is how deep values may nest, as encoding/json allows.
const maxDepth = 10000

// Fields calls each with the key and raw value of every top-level field of the object
// obj, in order (each value a part of obj, obj[i:j], so that cap(obj)-cap(value) is its
// offset), and reports whether obj is valid JSON whose fields it walked to the
// end: false when obj is not valid JSON (json.Valid), not an object, a key holds an
// escape, or each returned false, which stops the walk. A caller then leaves obj to
// encoding/json. One pass both checks and walks.
func Fields(obj []byte, each func(key, value []byte) bool) bool {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return skipSpace(obj, i+1) == len(obj)
	}
	for {
		key, next, ok := PlainString(obj, i)
		if !ok {
			return false
		}
		i = skipSpace(obj, next)
		if i >= len(obj) || obj[i] != ':' {
			return false
		}
		i = skipSpace(obj, i+1)
		end, ok := value(obj, i, 1)
		if !ok || !each(key, obj[i:end]) {
			return false
		}
		i = skipSpace(obj, end)
		switch {
		case i < len(obj) && obj[i] == ',':
			i = skipSpace(obj, i+1)
		case i < len(obj) && obj[i] == '}':
			return skipSpace(obj, i+1) == len(obj)
		default:
			return false
		}
	}
}

// Elements calls each with every element of the array arr, in order, and reports
// whether arr is a valid JSON array it walked to the end (false, as Fields, when it is
// not, or each returned false). arr may be a field's value as Fields hands it over.
func Elements(arr []byte, each func(value []byte) bool) bool {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return false
	}
	i = skipSpace(arr, i+1)
	if i < len(arr) && arr[i] == ']' {
		return skipSpace(arr, i+1) == len(arr)
	}
	for {
		end, ok := value(arr, i, 1)
		if !ok || !each(arr[i:end]) {
			return false
		}
		switch i = skipSpace(arr, end); {
		case i < len(arr) && arr[i] == ',':
			i = skipSpace(arr, i+1)
		case i < len(arr) && arr[i] == ']':
			return skipSpace(arr, i+1) == len(arr)
		default:
			return false
		}
	}
}

// Valid reports whether b is one JSON value, as json.Valid does, in one pass.
func Valid(b []byte) bool {
	end, ok := value(b, skipSpace(b, 0), 0)
	return ok && skipSpace(b, end) == len(b)
}

// value checks the JSON value at b[i] and returns where it ends.
func value(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		return str(b, i)
	case c == '{' || c == '[':
		return container(b, i, depth+1)
	case c == '-' || '0' <= c && c <= '9':
		return number(b, i)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	}
	return i, false
}

// container checks the object or array at b[i].
func container(b []byte, i, depth int) (int, bool) {
	if depth > maxDepth {
		return i, false
	}
	closing, object := byte(']'), b[i] == '{'
	if object {
		closing = '}'
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == closing {
		return i + 1, true
	}
	for {
		var ok bool
		if object {
			if i, ok = str(b, i); !ok {
				return i, false
			}
			if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
				return i, false
			}
			i = skipSpace(b, i+1)
		}
		if i, ok = value(b, i, depth); !ok {
			return i, false
		}
		switch i = skipSpace(b, i); {
		case i < len(b) && b[i] == ',':
			i = skipSpace(b, i+1)
		case i < len(b) && b[i] == closing:
			return i + 1, true
		default:
			return i, false
		}
	}
}

// str checks the string at b[i]: no control characters, only JSON's escapes.
func str(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < ' ':
			return i, false
		case c == '\\':
			i++
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					return i, false
				}
				i += 4
			default:
				return i, false
			}
		}
	}
	return i, false
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// number checks the number at b[i]: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func number(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		if i++; i >= len(b) || b[i] < '0' || b[i] > '9' {
			return i, false
		}
		i = digits(b, i)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		if i++; i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return i, false
		}
		i = digits(b, i)
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

func literal(b []byte, i int, word string) (int, bool) {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return i, false
	}
	return i + len(word), true
}

// Unquote reads a string value: its contents when they are the string itself, else
// what encoding/json reads. ok is false for a value that is not a string.
func Unquote(value []byte) (s string, ok bool) {
	if plain, _, ok := PlainString(value, 0); ok {
		return string(plain), true
	}
	if len(value) == 0 || value[0] != '"' {
		return "", false
	}
	return s, json.Unmarshal(value, &s) == nil
}

// PlainString returns the contents of the JSON string at b[i] when they are the string
// itself (no escape, no control character, valid UTF-8), and the index after it.
func PlainString(b []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	end := bytes.IndexByte(b[i+1:], '"')
	if end < 0 {
		return nil, i, false
	}
	s = b[i+1 : i+1+end]
	for _, c := range s {
		if c < ' ' || c == '\\' || c >= utf8.RuneSelf {
			return plainUnicode(b, i, s, end)
		}
	}
	return s, i + end + 2, true
}

// plainUnicode finishes PlainString for a string beyond ASCII.
func plainUnicode(b []byte, i int, s []byte, end int) ([]byte, int, bool) {
	for _, c := range s {
		if c < ' ' || c == '\\' {
			return nil, i, false
		}
	}
	if !utf8.Valid(s) {
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
