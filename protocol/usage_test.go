package protocol

import (
	"errors"
	"strings"
	"testing"
)

// TestUsageLines: a usage line's counts and cost are read as written; a negative, a
// fractional or a missing count is a bad field, never a silent zero.
func TestUsageLines(t *testing.T) {
	m, err := Decode([]byte(`{"type":"usage","model":"m1","input_tokens":1200,"output_tokens":300,"cache_read_tokens":5,"cost_usd":0.0123,"total":true}`), PlainTextLog)
	if err != nil {
		t.Fatal(err)
	}
	u := m.Usage
	if m.Type != TypeUsage || u == nil || u.Model != "m1" || u.Input != 1200 || u.Output != 300 || u.CacheRead != 5 || u.CostUSD == nil || *u.CostUSD != 0.0123 || !u.Total || u.Tokens() != 1505 {
		t.Fatalf("decoded %+v %+v", m, u)
	}
	if m, err := Decode([]byte(`{"type":"usage","output_tokens":7}`), PlainTextLog); err != nil || m.Usage.CostUSD != nil || m.Usage.Output != 7 {
		t.Fatalf("a usage line without a cost: %+v, %v; want its cost unknown", m, err)
	}
	for line, want := range map[string]string{
		`{"type":"usage","input_tokens":-1}`:         "input_tokens must be a whole number",
		`{"type":"usage","output_tokens":1.5}`:       "output_tokens must be a whole number",
		`{"type":"usage","input_tokens":"12"}`:       "a usage line",
		`{"type":"usage","cost_usd":-0.5}`:           "cost_usd must not be negative",
		`{"type":"usage","model":"m"}`:               "needs tokens or a cost",
		`{"type":"usage","cache_write_tokens":1e30}`: "cache_write_tokens must be a whole number",
	} {
		_, err := Decode([]byte(line), PlainTextLog)
		var bad *InvalidFrameError
		if !errors.As(err, &bad) || bad.Reason != "bad_field" || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want a bad field saying %q", line, err, want)
		}
	}
}

// TestUsageRunaway: a line claiming more than one line may (a cost or a count no call
// and no session so far reaches) says so; an ordinary line does not.
func TestUsageRunaway(t *testing.T) {
	for _, c := range []struct {
		line string
		want string
	}{
		{`{"type":"usage","model":"m","input_tokens":10,"output_tokens":1,"cost_usd":0.5}`, ""},
		{`{"type":"usage","cost_usd":10000,"total":true}`, ""},
		{`{"type":"usage","cost_usd":1e308}`, "an impossible $1e+308 in one usage line (one line may claim at most $10000; not counted)"},
		{`{"type":"usage","input_tokens":4e15}`, "an impossible 4000000000000000 tokens in one usage line"},
	} {
		u, err := ParseUsage([]byte(c.line))
		if err != nil {
			t.Fatalf("%s: %v", c.line, err)
		}
		if got := u.Runaway(); (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q; want %q", c.line, got, c.want)
		}
	}
	if _, err := ParseUsage([]byte(`{"type":"usage","cost_usd":NaN}`)); err == nil {
		t.Error("NaN parsed as a cost")
	}
}
