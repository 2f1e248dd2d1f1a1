package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Approval answers when an approval carries no options.
const (
	ApprovalYes = "yes"
	ApprovalNo  = "no"
)

// ValidateAnswer checks that value fits the request m, as protocol.md's typed questions
// say. An answer that does not fit is treated like no answer: the default is written
// with outcome "invalid".
func ValidateAnswer(m *Message, value json.RawMessage) error {
	if len(bytes.TrimSpace(value)) == 0 {
		return errors.New("the answer has no value")
	}
	var v any
	if err := json.Unmarshal(value, &v); err != nil {
		return fmt.Errorf("the answer is not JSON: %w", err)
	}
	switch m.Type {
	case TypeQuestion:
		return validateQuestion(m, v)
	case TypeApproval:
		if len(m.Options) == 0 {
			s, ok := v.(string)
			if !ok || (s != ApprovalYes && s != ApprovalNo) {
				return fmt.Errorf(`an approval is answered "yes" or "no", not %s`, value)
			}
			return nil
		}
		return memberOf(m.Options, v)
	case TypeToolCall:
		return nil
	}
	return fmt.Errorf("a %s is not a request", m.Type)
}

func validateQuestion(m *Message, v any) error {
	switch m.EffectiveKind() {
	case KindConfirm:
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("a confirm question is answered true or false, not %s", describe(v))
		}
	case KindSelect:
		if m.Multi {
			list, ok := v.([]any)
			if !ok {
				return fmt.Errorf("a multi select question is answered with a list of options, not %s", describe(v))
			}
			for _, item := range list {
				if err := memberOf(m.Options, item); err != nil {
					return err
				}
			}
			return nil
		}
		return memberOf(m.Options, v)
	case KindCustom:
		return CheckSchema(m.Schema, v)
	default: // prompt
		if HasSchema(m.Schema) {
			return CheckSchema(m.Schema, v)
		}
		if _, ok := v.(string); !ok {
			return fmt.Errorf("a prompt question is answered with a string, not %s", describe(v))
		}
	}
	return nil
}

func memberOf(options []Option, v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("the answer must be one of the options, not %s", describe(v))
	}
	for _, o := range options {
		if o.Value == s {
			return nil
		}
	}
	values := make([]string, len(options))
	for i, o := range options {
		values[i] = o.Value
	}
	return fmt.Errorf("%q is not one of the options %q", s, values)
}

// HasSchema reports whether schema constrains anything: not empty, null or {}.
func HasSchema(schema json.RawMessage) bool {
	s := bytes.TrimSpace(schema)
	return len(s) > 0 && !bytes.Equal(s, []byte("null")) && !bytes.Equal(s, []byte("{}"))
}

// CheckSchema validates v (decoded JSON) against the JSON Schema subset agentmux
// supports: type, enum, const, properties, required, additionalProperties (boolean or
// schema), items, minLength, maxLength, pattern, minimum, maximum, minItems and
// maxItems. Other keywords are ignored.
func CheckSchema(raw json.RawMessage, v any) error {
	if !HasSchema(raw) {
		return nil
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		return fmt.Errorf("the schema is not a JSON object: %w", err)
	}
	return checkNode(schema, v, "$")
}

func checkNode(s map[string]any, v any, path string) error {
	if t, ok := s["type"]; ok {
		if err := checkType(t, v, path); err != nil {
			return err
		}
	}
	if enum, ok := s["enum"].([]any); ok {
		if !slices.ContainsFunc(enum, func(e any) bool { return jsonEqual(e, v) }) {
			return fmt.Errorf("%s: %s is not one of the allowed values", path, describe(v))
		}
	}
	if c, ok := s["const"]; ok && !jsonEqual(c, v) {
		return fmt.Errorf("%s: %s is not the required value", path, describe(v))
	}
	switch x := v.(type) {
	case string:
		n := float64(utf8.RuneCountInString(x))
		if min, ok := number(s["minLength"]); ok && n < min {
			return fmt.Errorf("%s: string shorter than %v characters", path, min)
		}
		if max, ok := number(s["maxLength"]); ok && n > max {
			return fmt.Errorf("%s: string longer than %v characters", path, max)
		}
		if p, ok := s["pattern"].(string); ok {
			re, err := regexp.Compile(p)
			if err != nil {
				return fmt.Errorf("%s: the schema's pattern %q does not compile: %w", path, p, err)
			}
			if !re.MatchString(x) {
				return fmt.Errorf("%s: %q does not match %q", path, x, p)
			}
		}
	case float64:
		if min, ok := number(s["minimum"]); ok && x < min {
			return fmt.Errorf("%s: %v is below the minimum %v", path, x, min)
		}
		if max, ok := number(s["maximum"]); ok && x > max {
			return fmt.Errorf("%s: %v is above the maximum %v", path, x, max)
		}
	case []any:
		n := float64(len(x))
		if min, ok := number(s["minItems"]); ok && n < min {
			return fmt.Errorf("%s: fewer than %v items", path, min)
		}
		if max, ok := number(s["maxItems"]); ok && n > max {
			return fmt.Errorf("%s: more than %v items", path, max)
		}
		if items, ok := s["items"].(map[string]any); ok {
			for i, item := range x {
				if err := checkNode(items, item, fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
	case map[string]any:
		return checkObject(s, x, path)
	}
	return nil
}

func checkObject(s map[string]any, x map[string]any, path string) error {
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				if _, present := x[name]; !present {
					return fmt.Errorf("%s: missing required property %q", path, name)
				}
			}
		}
	}
	props, _ := s["properties"].(map[string]any)
	for _, name := range sortedKeys(x) {
		sub := path + "." + name
		if ps, ok := props[name].(map[string]any); ok {
			if err := checkNode(ps, x[name], sub); err != nil {
				return err
			}
			continue
		}
		switch extra := s["additionalProperties"].(type) {
		case bool:
			if !extra {
				return fmt.Errorf("%s: property not allowed", sub)
			}
		case map[string]any:
			if err := checkNode(extra, x[name], sub); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkType(t any, v any, path string) error {
	var names []string
	switch tt := t.(type) {
	case string:
		names = []string{tt}
	case []any:
		for _, n := range tt {
			if s, ok := n.(string); ok {
				names = append(names, s)
			}
		}
	}
	for _, n := range names {
		if hasType(n, v) {
			return nil
		}
	}
	return fmt.Errorf("%s: %s is not of type %s", path, describe(v), strings.Join(names, " or "))
}

func hasType(name string, v any) bool {
	switch name {
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == math.Trunc(f)
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "null":
		return v == nil
	}
	return false
}

func number(v any) (float64, bool) {
	f, ok := v.(float64)
	return f, ok
}

func jsonEqual(a, b any) bool {
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(x, y)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// describe renders a decoded JSON value for an error message, shortened.
func describe(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	const max = 60
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
