package rawjson

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Fields calls each with the key and raw value of every top-level field of obj, in
// order, and reports whether it walked them all: false when obj is not an object, a
// key holds an escape, or each returned false, which stops the walk. A caller then
// leaves obj to encoding/json. obj must be valid JSON (json.Valid).
func Fields(obj []byte, each func(key, value []byte) bool) bool {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	i = skipSpace(obj, i+1)
	for i < len(obj) && obj[i] != '}' {
		key, next, ok := PlainString(obj, i)
		if !ok {
			return false
		}
		i = skipSpace(obj, next)
		i = skipSpace(obj, i+1) // ':'
		end := skipValue(obj, i)
		if !each(key, obj[i:end]) {
			return false
		}
		i = skipSpace(obj, end)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	return true
}

// Unquote reads a string value: its contents when it holds no escape, else what
// encoding/json reads. ok is false for a value that is not a string.
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
// itself (no escape, valid UTF-8), and the index after it.
func PlainString(b []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	end := bytes.IndexByte(b[i+1:], '"')
	if end < 0 {
		return nil, i, false
	}
	s = b[i+1 : i+1+end]
	if bytes.IndexByte(s, '\\') >= 0 || !utf8.Valid(s) {
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
