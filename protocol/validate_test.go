package protocol

import (
	"encoding/json"
	"testing"
)

func mustDecode(t *testing.T, line string) *Message {
	t.Helper()
	m, err := Decode([]byte(line), PlainTextResult)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestValidateAnswer(t *testing.T) {
	for _, tc := range []struct {
		req, value string
		ok         bool
	}{
		{`{"type":"question","question":"q"}`, `"free text"`, true},
		{`{"type":"question","question":"q"}`, `42`, false},
		{`{"type":"question","question":"q","kind":"design","options":["a"]}`, `"anything"`, true},
		{`{"type":"question","question":"q","kind":"confirm"}`, `true`, true},
		{`{"type":"question","question":"q","kind":"confirm"}`, `"yes"`, false},
		{`{"type":"question","question":"q","kind":"select","options":["a","b"]}`, `"b"`, true},
		{`{"type":"question","question":"q","kind":"select","options":["a","b"]}`, `"c"`, false},
		{`{"type":"question","question":"q","kind":"select","multi":true,"options":["a","b"]}`, `["a","b"]`, true},
		{`{"type":"question","question":"q","kind":"select","multi":true,"options":["a","b"]}`, `["a","z"]`, false},
		{`{"type":"question","question":"q","kind":"select","multi":true,"options":["a","b"]}`, `"a"`, false},
		{`{"type":"question","question":"q","kind":"custom","schema":{"type":"object","required":["n"],"properties":{"n":{"type":"integer","minimum":1}},"additionalProperties":false}}`, `{"n":3}`, true},
		{`{"type":"question","question":"q","kind":"custom","schema":{"type":"object","required":["n"],"properties":{"n":{"type":"integer","minimum":1}},"additionalProperties":false}}`, `{"n":0}`, false},
		{`{"type":"question","question":"q","kind":"custom","schema":{"type":"object","required":["n"],"properties":{"n":{"type":"integer","minimum":1}},"additionalProperties":false}}`, `{"n":2,"m":1}`, false},
		{`{"type":"question","question":"q","kind":"custom","schema":{"type":"object","required":["n"]}}`, `{}`, false},
		{`{"type":"question","question":"q","schema":{"type":"array","items":{"enum":["x","y"]},"maxItems":2}}`, `["x","y"]`, true},
		{`{"type":"question","question":"q","schema":{"type":"array","items":{"enum":["x","y"]},"maxItems":2}}`, `["x","z"]`, false},
		{`{"type":"question","question":"q","schema":{"type":"string","pattern":"^v[0-9]+$","maxLength":4}}`, `"v12"`, true},
		{`{"type":"question","question":"q","schema":{"type":"string","pattern":"^v[0-9]+$","maxLength":4}}`, `"v12345"`, false},
		{`{"type":"question","question":"q","schema":{"type":["number","null"]}}`, `null`, true},
		{`{"type":"approval","description":"d"}`, `"yes"`, true},
		{`{"type":"approval","description":"d"}`, `"maybe"`, false},
		{`{"type":"approval","description":"d"}`, `true`, false},
		{`{"type":"approval","description":"d","options":["once","always","never"]}`, `"once"`, true},
		{`{"type":"approval","description":"d","options":["once","always","never"]}`, `"yes"`, false},
		{`{"type":"tool_call","tool":"t"}`, `{"rows":[1]}`, true},
		{`{"type":"question","question":"q"}`, ``, false},
		// Strings read without encoding/json and with it: the same answers.
		{`{"type":"approval","description":"d"}`, " \"yes\"\n", true},
		{`{"type":"approval","description":"d"}`, `"y\u0065s"`, true},
		{`{"type":"approval","description":"d"}`, `"yes" "no"`, false},
		{`{"type":"approval","description":"d"}`, `"yes`, false},
		{`{"type":"question","question":"q","kind":"select","options":["é","b"]}`, `"é"`, true},
		{`{"type":"question","question":"q","kind":"select","options":["é","b"]}`, "\"\xff\"", false},
		{`{"type":"question","question":"q"}`, `"tab\there"`, true},
	} {
		err := ValidateAnswer(mustDecode(t, tc.req), json.RawMessage(tc.value))
		if (err == nil) != tc.ok {
			t.Errorf("ValidateAnswer(%s, %s) = %v; want ok=%v", tc.req, tc.value, err, tc.ok)
		}
	}
}

// A budget request is the runtime's: an agent's line of that type is not a request,
// and the request is known from its type and text, answered "yes" or "no".
func TestBudgetRequest(t *testing.T) {
	body := []byte(`{"type":"budget","id":"budget-1","description":"s-1 spent $5.02 of $5; go on with +$5?"}`)
	if m := mustDecode(t, string(body)); m.Type != TypeUnhandled || m.Type.IsRequest() {
		t.Fatalf("an agent's budget line decoded as %q; want it unhandled, not a request", m.Type)
	}
	m := RequestOf(body, string(TypeBudget), "s-1 spent $5.02 of $5; go on with +$5?")
	if m.Type != TypeBudget || !m.Type.IsRequest() || m.RequestText() != "s-1 spent $5.02 of $5; go on with +$5?" {
		t.Fatalf("the budget request: %+v", m)
	}
	for value, ok := range map[string]bool{`"yes"`: true, `"no"`: true, `true`: false, `"raise"`: false} {
		if err := ValidateAnswer(m, json.RawMessage(value)); (err == nil) != ok {
			t.Errorf("a budget request answered %s: %v; want ok=%v", value, err, ok)
		}
	}
}
