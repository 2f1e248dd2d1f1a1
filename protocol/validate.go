package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentmux/agentmux/internal/rawjson"
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
	trimmed := bytes.TrimSpace(value)
	if len(trimmed) == 0 {
		return errors.New("the answer has no value")
	}
	var v any
	if plain, next, ok := rawjson.PlainString(trimmed, 0); ok && next == len(trimmed) {
		v = string(plain) // most answers: a string that is its own contents
	} else if err := json.Unmarshal(value, &v); err != nil {
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
	case TypeBudget:
		if s, ok := v.(string); !ok || (s != ApprovalYes && s != ApprovalNo) {
			return fmt.Errorf(`a budget request is answered "yes" (raise it) or "no" (end the session), not %s`, value)
		}
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
