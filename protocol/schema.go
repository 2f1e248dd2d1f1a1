package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schema is a compiled JSON Schema: draft 2020-12 unless its $schema names another draft,
// with format assertions on ("format": "email" is checked, not only noted).
type Schema struct {
	compiled *jsonschema.Schema
}

// schemaURL names the one document a Schema compiles; nothing is ever loaded from it.
const schemaURL = "urn:agentmux:schema"

// CompileSchema compiles raw. It fails on a document that is not JSON, a keyword of the
// wrong shape ("required": "x"), a pattern that does not compile, an unknown $schema
// draft, or a $ref to anything outside the document.
func CompileSchema(raw json.RawMessage) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("the schema is not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	// A loader of no schemes refuses every URL. A schema comes from an agent (a question's
	// schema) or from the manifest: its $ref may reach its own $defs and JSON pointers,
	// never a file or the network, so an agent cannot make the node read /etc/shadow or
	// fetch a URL by asking a question. The draft meta-schemas are built in.
	c.UseLoader(jsonschema.SchemeURLLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("the schema cannot be used: %w", err)
	}
	compiled, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("the schema is not a valid JSON Schema: %s", schemaProblem(err))
	}
	return &Schema{compiled: compiled}, nil
}

// Check validates v, a value decoded by encoding/json. The error names each place that
// does not fit, as a JSON pointer ("$" is the whole value): `/n: minimum: got 0, want 1`.
func (s *Schema) Check(v any) error {
	err := s.compiled.Validate(v)
	var verr *jsonschema.ValidationError
	if errors.As(err, &verr) {
		return errors.New(validationProblem(verr))
	}
	return err
}

// CheckSchema validates v (decoded JSON) against the JSON Schema raw; an empty schema
// ({}, null or nothing) lets everything through.
func CheckSchema(raw json.RawMessage, v any) error {
	if !HasSchema(raw) {
		return nil
	}
	s, err := CompileSchema(raw)
	if err != nil {
		return err
	}
	return s.Check(v)
}

// HasSchema reports whether schema constrains anything: not empty, null or {}.
func HasSchema(schema json.RawMessage) bool {
	s := bytes.TrimSpace(schema)
	return len(s) > 0 && !bytes.Equal(s, []byte("null")) && !bytes.Equal(s, []byte("{}"))
}

// maxProblems bounds how many places one error message names: a oneOf of ten branches
// would otherwise make a paragraph of a reason.
const maxProblems = 3

// validationProblem flattens the validator's tree of causes into its leaves, the places
// that actually failed, in one line.
func validationProblem(e *jsonschema.ValidationError) string {
	p := message.NewPrinter(language.English)
	var leaves []string
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			leaves = append(leaves, pointer(e.InstanceLocation)+": "+e.ErrorKind.LocalizedString(p))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(e)
	if len(leaves) > maxProblems {
		leaves = append(leaves[:maxProblems], fmt.Sprintf("and %d more", len(leaves)-maxProblems))
	}
	return strings.Join(leaves, "; ")
}

// schemaProblem is a compile error in one line, without the validator's URL of the
// document (which is ours, not the user's).
func schemaProblem(err error) string {
	var load *jsonschema.LoadURLError
	if errors.As(err, &load) {
		return fmt.Sprintf("$ref %q is outside the schema; a $ref reaches only the schema's own $defs and JSON pointers", load.URL)
	}
	var verr *jsonschema.SchemaValidationError
	if errors.As(err, &verr) {
		var inner *jsonschema.ValidationError
		if errors.As(verr.Err, &inner) {
			return validationProblem(inner)
		}
	}
	msg := strings.ReplaceAll(err.Error(), schemaURL, "the schema")
	return strings.Join(strings.Fields(msg), " ")
}

// pointer renders an instance location as a JSON pointer, "$" for the whole value.
func pointer(tokens []string) string {
	if len(tokens) == 0 {
		return "$"
	}
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return b.String()
}
