package rawjson

import (
	"encoding/json"
	"math"
	"testing"
)

// Strings are escaped exactly as encoding/json escapes them.
func TestStringEscapesAsEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `quote " and \ backslash`, "line\nbreak\r\ttab", "\x00\x01\b\f\x1f\x7f",
		"<b>&amp;</b>", "naïve — ünïcödé 🙂", "\u2028\u2029", "bad \xff utf-8 \xc3", "\xed\xa0\x80 surrogate"} {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Errorf("AppendString(%q) = %s; want %s", s, got, want)
		}
	}
}

// Numbers are written as encoding/json writes a float64.
func TestFloatAsEncodingJSON(t *testing.T) {
	for _, f := range []float64{0, 1, -1, 0.5, 1.25, 123.456, 1e-6, 1e-7, 9.99e-7, 1e20, 1e21, 1.5e300, -2e-9, 0.001} {
		want, _ := json.Marshal(f)
		if got := AppendFloat(nil, f); string(got) != string(want) {
			t.Errorf("AppendFloat(%v) = %s; want %s", f, got, want)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if got := AppendFloat(nil, f); string(got) != "0" {
			t.Errorf("AppendFloat(%v) = %s; want 0", f, got)
		}
	}
}

// Raw JSON is kept, compacted; empty is null; what is not JSON becomes a string.
func TestRaw(t *testing.T) {
	for in, want := range map[string]string{
		``:                       `null`,
		`"yes"`:                  `"yes"`,
		`{"a": [1, 2], "b":"x"}`: `{"a":[1,2],"b":"x"}`,
		"{\n\"a\":\t1}":          `{"a":1}`,
		`not json`:               `"not json"`,
		`{"open": `:              `"{\"open\": "`,
	} {
		if got := AppendRaw([]byte("x"), []byte(in)); string(got) != "x"+want {
			t.Errorf("AppendRaw(%q) = %s; want x%s", in, got, want)
		}
	}
}

// An object's fields come in order, omitted ones leave no comma behind, and it
// decodes to what was put in.
func TestObject(t *testing.T) {
	o := Begin([]byte("prefix "))
	o.StringOmit("none", "")
	o.String("s", "a\"b")
	o.IntOmit("zero", 0)
	o.Int("n", -42)
	o.FloatOmit("f0", 0)
	o.Float("f", 2.5)
	o.BoolOmit("no", false)
	o.BoolOmit("yes", true)
	o.RawOmit("r0", nil)
	o.Raw("r", []byte(`[1, {"x": null}]`))
	o.Raw("null", nil)
	got := string(o.End())
	want := `prefix {"s":"a\"b","n":-42,"f":2.5,"yes":true,"r":[1,{"x":null}],"null":null}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	empty := Begin(nil)
	if got := string(empty.End()); got != "{}" {
		t.Errorf("an empty object is %s", got)
	}
}

// FuzzString: any string round-trips through encoding/json's decoder as encoding/json
// would have written it.
func FuzzString(f *testing.F) {
	f.Add("plain")
	f.Add("<\u2028\xff\"\\\n")
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %s; want %s", s, got, want)
		}
	})
}
