package rawjson

import (
	"encoding/json"
	"strings"
	"testing"
)

var validity = []string{
	`{}`, ` { } `, `{"a":1}`, `{"a":[1,2,{"b":null}],"c":"x\"y\u00e9\\"}`, `[]`, `[1,-0.5e+3,true,false,null]`, `"s"`, `0`, `-0`, `1e5`, `1E-5`,
	``, ` `, `{`, `}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{,}`, `[1,]`, `[,1]`, `01`, `1.`, `.5`, `-`, `1e`, `1e+`, `+1`, `tru`, `nul`, `truex`,
	`"\x01"`, "\"a\x1fb\"", `"\q"`, `"\u12"`, `"\u12G4"`, `"unterminated`, `{"a":1} x`, `{"a":1}{}`, `{a:1}`, `{'a':1}`, "\"\xff\xfe\"",
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001), strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
}

// TestValidAsEncodingJSON: Valid says of each input what json.Valid says.
func TestValidAsEncodingJSON(t *testing.T) {
	for _, in := range validity {
		if got, want := Valid([]byte(in)), json.Valid([]byte(in)); got != want {
			t.Errorf("Valid(%.40q) = %v; json.Valid says %v", in, got, want)
		}
	}
}

// TestFields walks an object's fields in order, and refuses what is not a valid object
// or has an escaped key.
func TestFields(t *testing.T) {
	var got []string
	ok := Fields([]byte(` {"type" : "progress", "n":[1, {"x":2}] ,"s":"a\"b"} `), func(k, v []byte) bool {
		got = append(got, string(k)+"="+string(v))
		return true
	})
	if want := `type="progress"|n=[1, {"x":2}]|s="a\"b"`; !ok || strings.Join(got, "|") != want {
		t.Fatalf("Fields = %v, %q; want %q", ok, got, want)
	}
	for _, in := range []string{`[1]`, `{"a":1`, `{"a":1} x`, `{"\u0061":1}`, `{"a":01}`, `"s"`} {
		if Fields([]byte(in), func(k, v []byte) bool { return true }) {
			t.Errorf("Fields(%q) = true", in)
		}
	}
	stopped := Fields([]byte(`{"a":1,"b":2}`), func(k, v []byte) bool { return string(k) != "a" })
	if stopped {
		t.Error("Fields walked on after each said stop")
	}
}

// TestElements walks an array's elements in order, and refuses what is not a valid
// array.
func TestElements(t *testing.T) {
	var got []string
	ok := Elements([]byte(` ["a", {"b":[1,2]} ,3,null] `), func(v []byte) bool {
		got = append(got, string(v))
		return true
	})
	if want := `"a"|{"b":[1,2]}|3|null`; !ok || strings.Join(got, "|") != want {
		t.Fatalf("Elements = %v, %q; want %q", ok, got, want)
	}
	if !Elements([]byte(`[]`), func([]byte) bool { return false }) {
		t.Error("an empty array is an array")
	}
	for _, in := range []string{`{}`, `[1,]`, `[1 2]`, `[1] x`, `["a"`, `"s"`} {
		if Elements([]byte(in), func([]byte) bool { return true }) {
			t.Errorf("Elements(%q) = true", in)
		}
	}
}

// FuzzValid: Valid and json.Valid agree on anything; Fields is true only for a valid
// object, Elements only for a valid array.
func FuzzValid(f *testing.F) {
	for _, in := range validity[:len(validity)-2] {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want := json.Valid(b)
		if got := Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v; json.Valid says %v", b, got, want)
		}
		if Fields(b, func(k, v []byte) bool { return true }) && !want {
			t.Fatalf("Fields(%q) walked what is not JSON", b)
		}
		if Elements(b, func([]byte) bool { return true }) && !want {
			t.Fatalf("Elements(%q) walked what is not JSON", b)
		}
	})
}

func TestCopyHandsOutPartsOfOneCopy(t *testing.T) {
	doc := []byte(`{"a":"plain","b":"esc\"aped","c":{"x":[1,2]},"d":"ünï"}`)
	c := NewCopy(doc)
	got := map[string]any{}
	if !Fields(doc, func(key, value []byte) bool {
		switch string(key) {
		case "c":
			got["c"] = c.Raw(value)
		default:
			s, ok := c.Unquote(value)
			if !ok {
				t.Errorf("Unquote(%s) failed", value)
			}
			got[string(key)] = s
		}
		return true
	}) {
		t.Fatal("Fields refused a valid object")
	}
	if got["a"] != "plain" || got["b"] != `esc"aped` || got["d"] != "ünï" || string(got["c"].([]byte)) != `{"x":[1,2]}` {
		t.Fatalf("got %q", got)
	}
	doc[7] = 'P' // the document changes: what was handed out does not
	raw := got["c"].([]byte)
	raw[0] = '[' // nor does changing one value change the others or the document
	if got["a"] != "plain" || doc[len(`{"a":"plain","b":"esc\"aped","c":`)] != '{' {
		t.Fatalf("a part changed with the document: %q, %s", got["a"], doc)
	}
	if len(raw) != cap(raw) {
		t.Errorf("a raw value has room to grow (len %d, cap %d): an append would write over its neighbour", len(raw), cap(raw))
	}

	// Values that are not parts of the document are copied alone.
	other := []byte(`"elsewhere"`)
	if s, ok := c.Unquote(other); !ok || s != "elsewhere" {
		t.Errorf("Unquote of a value from elsewhere = %q, %v", s, ok)
	}
	if r := c.Raw(other); string(r) != `"elsewhere"` {
		t.Errorf("Raw of a value from elsewhere = %s", r)
	}
	if _, ok := c.Unquote([]byte(`"broken`)); ok {
		t.Error("Unquote accepted an unterminated string")
	}
}
