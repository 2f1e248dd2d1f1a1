package protocol

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The keywords the old hand-written subset ignored are enforced: a value that breaks
// oneOf, anyOf, a $ref to $defs, format or unevaluatedProperties is refused.
func TestSchemaFullDraft2020(t *testing.T) {
	for _, tc := range []struct {
		name, schema, value string
		want                string // "" fits; else a part of the error
	}{
		{"oneOf fits one", `{"oneOf":[{"type":"integer"},{"type":"string"}]}`, `3`, ""},
		{"oneOf fits none", `{"oneOf":[{"type":"integer"},{"type":"string"}]}`, `true`, "got boolean, want integer"},
		{"anyOf", `{"anyOf":[{"minimum":10},{"maximum":-10}]}`, `0`, "minimum"},
		{"ref to defs", `{"$defs":{"env":{"enum":["staging","prod"]}},"properties":{"env":{"$ref":"#/$defs/env"}}}`, `{"env":"dev"}`, "/env"},
		{"ref to defs fits", `{"$defs":{"env":{"enum":["staging","prod"]}},"properties":{"env":{"$ref":"#/$defs/env"}}}`, `{"env":"prod"}`, ""},
		{"format email", `{"type":"string","format":"email"}`, `"not an address"`, "email"},
		{"format date-time", `{"type":"string","format":"date-time"}`, `"2026-11-26T16:00:00Z"`, ""},
		{"unevaluatedProperties", `{"properties":{"a":{}},"unevaluatedProperties":false}`, `{"a":1,"b":2}`, "/b"},
		{"required names the property", `{"type":"object","required":["passed"]}`, `{}`, "$: missing property 'passed'"},
		{"nested place", `{"properties":{"n":{"type":"integer","minimum":1}}}`, `{"n":0}`, "/n: minimum"},
		{"draft-07 by $schema", `{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"}]}`, `[1]`, "/0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v any
			if err := json.Unmarshal([]byte(tc.value), &v); err != nil {
				t.Fatal(err)
			}
			err := CheckSchema(json.RawMessage(tc.schema), v)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("CheckSchema(%s, %s) = %v; want it to fit", tc.schema, tc.value, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("CheckSchema(%s, %s) = %v; want an error naming %q", tc.schema, tc.value, err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines; a reason is one line: %q", err)
			}
		})
	}
}

// A schema of the wrong shape is refused when compiled, with the library's reason.
func TestCompileSchemaRefusesBadSchemas(t *testing.T) {
	for _, tc := range []struct{ schema, want string }{
		{`{"required":"passed"}`, "/required"},
		{`{"type":5}`, "/type"},
		{`{"pattern":"("}`, "pattern"},
		{`{"type":`, "not JSON"},
		{`{"$ref":"#/$defs/missing"}`, "missing"},
	} {
		_, err := CompileSchema(json.RawMessage(tc.schema))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CompileSchema(%s) = %v; want an error naming %q", tc.schema, err, tc.want)
		}
	}
}

// An agent is an adversary: a question's schema that points $ref at a file on the node,
// or at a URL, is refused without reading the file or fetching anything. The file here
// holds a schema that would accept the answer; were it read, the check would pass.
func TestSchemaRefNeverLeavesTheDocument(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.json")
	if err := os.WriteFile(secret, []byte(`{"type":"string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{
		"file://" + secret,
		"http://127.0.0.1:1/schema.json",
	} {
		q := mustDecode(t, `{"type":"question","question":"q","kind":"custom","schema":{"$ref":"`+ref+`"}}`)
		err := ValidateAnswer(q, json.RawMessage(`"anything"`))
		if err == nil {
			t.Fatalf("a schema with $ref %s validated an answer; it must not load anything", ref)
		}
		if !strings.Contains(err.Error(), "is outside the schema") {
			t.Errorf("$ref %s: %v; want the load refused", ref, err)
		}
	}
	// The same through $id, which moves the base a relative $ref resolves against.
	q := mustDecode(t, `{"type":"question","question":"q","kind":"custom","schema":{"$id":"file://`+dir+`/","$ref":"secret.json"}}`)
	if err := ValidateAnswer(q, json.RawMessage(`"anything"`)); err == nil {
		t.Fatal("a relative $ref under a file $id loaded the file")
	}
}

func BenchmarkCheckSchema(b *testing.B) {
	schema := json.RawMessage(`{"type":"object","required":["n"],"properties":{"n":{"type":"integer","minimum":1},"env":{"enum":["staging","prod"]}},"additionalProperties":false}`)
	var v any
	if err := json.Unmarshal([]byte(`{"n":3,"env":"prod"}`), &v); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := CheckSchema(schema, v); err != nil {
			b.Fatal(err)
		}
	}
}
