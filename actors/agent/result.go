package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/wire"
)

// withField returns the JSON object obj with key set to the string value.
func withField(obj json.RawMessage, key, value string) json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		return obj
	}
	v, _ := json.Marshal(value)
	m[key] = v
	out, err := json.Marshal(m)
	if err != nil {
		return obj
	}
	return out
}

// onResult ends the session with its result. A typed session's result must fit its
// schema: one that does not gets a new prompt on the same process, saying what was
// wrong, until the session's result retries are spent; then the session ends in error.
func (a *Agent) onResult(s *session, msg *protocol.Message) {
	payload := msg.Raw
	if s.partial.Len() > 0 {
		payload = withField(payload, "partial_output", s.partial.String())
	}
	text := msg.Text
	if text == "" {
		text = s.partial.String() // ACP's result is its streamed text
	}
	res := &Result{OK: true, Payload: payload, Text: text}
	if s.result == nil {
		a.endSession(res, true)
		return
	}
	data, err := typedResult(msg.Raw, text, s.result.Schema)
	h := a.host.Name
	switch {
	case err == nil:
		a.cfg.Metrics.ResultChecks.WithLabelValues(h, "fit").Inc()
		res.Data = data
		a.endSession(res, true)
	case s.reprompts < s.result.Retries && a.phase == phaseBusy:
		s.reprompts++
		a.cfg.Metrics.ResultChecks.WithLabelValues(h, "reprompted").Inc()
		ev, _ := json.Marshal(struct {
			Error    string `json:"error"`
			Reprompt int    `json:"reprompt"`
			Of       int    `json:"of"`
		}{err.Error(), s.reprompts, s.result.Retries})
		a.publishOn(s, wire.EventResultInvalid, ev)
		s.partial.Reset() // the next turn's text is the next result's
		a.reprompt(s, err)
	default:
		a.cfg.Metrics.ResultChecks.WithLabelValues(h, "failed").Inc()
		why := fmt.Sprintf("the result does not fit the schema: %v", err)
		if s.reprompts > 0 {
			why = fmt.Sprintf("the result does not fit the schema after %d new prompts: %v", s.reprompts, err)
		}
		a.endSession(&Result{Error: why, Payload: payload, Text: text}, true)
	}
}

// reprompt asks the agent, in the same conversation, for a result that fits.
func (a *Agent) reprompt(s *session, why error) {
	text := fmt.Sprintf("Your result does not fit the required JSON Schema: %v. Reply with the result again as one JSON object that fits this schema, and nothing else: %s", why, s.result.Schema)
	a.proc.stdin.write(a.dialect.Continue(tracedPrompt(s, protocol.Prompt{Text: text, Session: s.id, Schema: s.result.Schema, SchemaError: why.Error()})))
}

// typedResult is a result's JSON: the data field of its raw message, or its text parsed
// as JSON (inside a ```json fence or not), checked against schema.
func typedResult(raw []byte, text string, schema json.RawMessage) (json.RawMessage, error) {
	var fields struct {
		Data json.RawMessage `json:"data"`
	}
	_ = json.Unmarshal(raw, &fields)
	data := fields.Data
	if len(data) == 0 || string(data) == "null" {
		data = json.RawMessage(unfence(text))
		if !json.Valid(data) {
			return nil, fmt.Errorf("the result is not JSON: neither a data field nor a text that parses (%q)", cutLine(text, 120))
		}
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("the result is not JSON: %w", err)
	}
	if err := protocol.CheckSchema(schema, v); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if json.Compact(&b, data) != nil {
		return data, nil
	}
	return b.Bytes(), nil
}

// unfence returns the body of the first ``` code fence in text, or text trimmed.
func unfence(text string) string {
	t := strings.TrimSpace(text)
	start := strings.Index(t, "```")
	if start < 0 {
		return t
	}
	body := t[start+3:]
	if nl := strings.IndexByte(body, '\n'); nl >= 0 {
		body = body[nl+1:] // the fence's language tag
	}
	if end := strings.Index(body, "```"); end >= 0 {
		body = body[:end]
	}
	return strings.TrimSpace(body)
}
