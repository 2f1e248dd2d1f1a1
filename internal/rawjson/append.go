package rawjson

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// Object is a JSON object being appended to a byte slice. Keys are written as given:
// they must be plain ASCII that needs no escape, as Go field tags are.
type Object struct {
	b      []byte
	fields int
}

// Begin starts an object at the end of dst.
func Begin(dst []byte) Object { return Object{b: append(dst, '{')} }

// End closes the object and returns the slice it was appended to.
func (o *Object) End() []byte { return append(o.b, '}') }

func (o *Object) key(k string) {
	if o.fields > 0 {
		o.b = append(o.b, ',')
	}
	o.fields++
	o.b = append(o.b, '"')
	o.b = append(o.b, k...)
	o.b = append(o.b, '"', ':')
}

// String appends a string field.
func (o *Object) String(k, v string) {
	o.key(k)
	o.b = AppendString(o.b, v)
}

// StringOmit appends a string field unless it is empty.
func (o *Object) StringOmit(k, v string) {
	if v != "" {
		o.String(k, v)
	}
}

// Int appends an integer field.
func (o *Object) Int(k string, v int64) {
	o.key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
}

// IntOmit appends an integer field unless it is zero.
func (o *Object) IntOmit(k string, v int64) {
	if v != 0 {
		o.Int(k, v)
	}
}

// AppendFloat appends a number field.
func (o *Object) Float(k string, v float64) {
	o.key(k)
	o.b = AppendFloat(o.b, v)
}

// FloatOmit appends a number field unless it is zero.
func (o *Object) FloatOmit(k string, v float64) {
	if v != 0 {
		o.Float(k, v)
	}
}

// BoolOmit appends a field true, or nothing for false.
func (o *Object) BoolOmit(k string, v bool) {
	if v {
		o.key(k)
		o.b = append(o.b, "true"...)
	}
}

// Raw appends a field whose value is JSON already (null when empty).
func (o *Object) Raw(k string, v []byte) {
	o.key(k)
	o.b = AppendRaw(o.b, v)
}

// RawOmit appends a JSON field unless it is empty, as omitempty does for
// json.RawMessage.
func (o *Object) RawOmit(k string, v []byte) {
	if len(v) > 0 {
		o.Raw(k, v)
	}
}

// AppendRaw appends v, which should be JSON, compacted: as json.RawMessage marshals, so a
// value can never break the document it is part of. Empty is null; what is not JSON
// goes as a string of its bytes rather than corrupt the document.
func AppendRaw(dst, v []byte) []byte {
	if len(v) == 0 {
		return append(dst, "null"...)
	}
	if !hasSpace(v) && Valid(v) {
		return append(dst, v...)
	}
	buf := bytes.NewBuffer(dst)
	if err := json.Compact(buf, v); err != nil {
		return AppendString(dst, string(v))
	}
	return buf.Bytes()
}

// hasSpace reports whitespace outside strings in v: only then is there something to
// compact.
func hasSpace(v []byte) bool {
	inString := false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case inString && c == '\\':
			i++ // the escaped byte
		case c == '"':
			inString = !inString
		case !inString && c <= ' ':
			return true
		}
	}
	return false
}

const hex = "0123456789abcdef"

// AppendString appends s as a JSON string with encoding/json's escapes: quote, backslash,
// control characters, <, > and &, U+2028 and U+2029; invalid UTF-8 becomes U+FFFD.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= ' ' && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendFloat appends f as encoding/json writes a float64; a value JSON cannot hold (NaN,
// ±Inf) is written as 0.
func AppendFloat(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, '0')
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 → e-9, as encoding/json does.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}
