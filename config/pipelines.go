package config

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/agentmux/agentmux/protocol"
)

// Pipeline chains listen sessions: each stage runs on a host, its prompt built from
// the run's params and the earlier stages' results. [pipelines.X].
type Pipeline struct {
	Name   string   `toml:"-"`
	Params []string `toml:"params"`
	Stages []*Stage `toml:"stages"`
	// Budget bounds the whole run: what its stages spent so far counts against each
	// stage's session, and a raise in one stands for the next (nil: its hosts' own).
	Budget *Budget `toml:"budget"`
}

// Stage is one step of a pipeline: [[pipelines.X.stages]].
type Stage struct {
	Name   string `toml:"name"`
	Host   string `toml:"host"`
	Prompt string `toml:"prompt"`
	// Routes are tried before the manifest's [[routes]] for this stage's requests.
	Routes       []*Route       `toml:"routes"`
	ResultSchema map[string]any `toml:"result_schema"`
	// ResultRetries is how many new prompts a result that does not fit gets.
	ResultRetries int `toml:"result_retries"`

	Template *Template `toml:"-"`
	// Result is the stage's typed result: its own, or else its host's.
	Result *ResultSpec `toml:"-"`
}

// ResultSpec is what a session's result must be: JSON fitting Schema, and how many
// new prompts saying what was wrong it gets before the session ends in error.
type ResultSpec struct {
	Schema  json.RawMessage
	Retries int
}

// Stage returns the stage named name, or nil.
func (p *Pipeline) Stage(name string) *Stage {
	for _, s := range p.Stages {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Message types a host may declare in messages.
var messageTypes = []string{"progress", "log", "partial", "heartbeat", "question", "approval", "tool_call", "result", "error", "withdrawn"}

// hostResult validates a host's messages and typed result.
func (v *validator) hostResult(at func(string) []string, h *Host) {
	for i, typ := range h.Messages {
		if !slices.Contains(messageTypes, typ) {
			v.add(append(at("messages"), strconv.Itoa(i)), "%q is not a message type; use %s", typ, strings.Join(messageTypes, ", "))
		}
	}
	h.Result = v.resultSpec(at("result_schema"), at("result_retries"), h.ResultSchema, h.ResultRetries)
}

// resultSpec validates a result_schema and result_retries; nil without a schema.
func (v *validator) resultSpec(schemaAt, retriesAt []string, schema map[string]any, retries int) *ResultSpec {
	if retries < 0 {
		v.add(retriesAt, "%d is negative; use 0 for no new prompts", retries)
	}
	if schema == nil {
		if retries > 0 {
			v.add(retriesAt, "result_retries needs a result_schema to check results against")
		}
		return nil
	}
	raw := v.toJSON(schemaAt, schema)
	if raw == nil {
		return nil
	}
	if _, err := protocol.CompileSchema(raw); err != nil {
		v.add(schemaAt, "%v (result_schema is JSON Schema, draft 2020-12 unless its $schema says otherwise)", err)
	}
	return &ResultSpec{Schema: raw, Retries: retries}
}

// sends reports a route for requests of type typ that host h declares it never sends.
func (v *validator) sends(at []string, h *Host, typ string) {
	if typ != "" && !h.Sends(typ) {
		v.add(at, "host %q does not send %s (its messages are %s); the route would never match", h.Name, typ, strings.Join(h.Messages, ", "))
	}
}

func (v *validator) pipeline(p *Pipeline, m *Manifest) {
	at := func(key ...string) []string { return append([]string{"pipelines", p.Name}, key...) }
	if !namePattern.MatchString(p.Name) {
		v.add(at(), "pipeline name %q may only hold letters, digits, '_' and '-' (it is part of NATS subjects)", p.Name)
	}
	if _, clash := m.Hosts[p.Name]; clash {
		v.add(at(), "pipeline %q has a host's name; tasks for both would share agentmux.task.%s: rename one", p.Name, p.Name)
	}
	v.budget(at("budget"), p.Budget)
	if len(p.Stages) == 0 {
		v.add(at(), `a pipeline needs stages: [[pipelines.%s.stages]] with name, host and prompt`, p.Name)
	}
	known := map[string]string{} // name → "param" or "stage"
	for i, name := range p.Params {
		if !namePattern.MatchString(name) {
			v.add(append(at("params"), strconv.Itoa(i)), "param %q may only hold letters, digits, '_' and '-'", name)
		}
		if known[name] != "" {
			v.add(append(at("params"), strconv.Itoa(i)), "param %q is listed twice", name)
		}
		known[name] = "param"
	}
	for i, s := range p.Stages {
		v.stage(at("stages", strconv.Itoa(i)), p, s, known, m)
		if s.Name != "" && known[s.Name] == "" {
			known[s.Name] = "stage"
		}
	}
}

func (v *validator) stage(base []string, p *Pipeline, s *Stage, known map[string]string, m *Manifest) {
	at := func(key ...string) []string { return append(append([]string{}, base...), key...) }
	switch {
	case s.Name == "":
		v.add(at(), `a stage needs a name, e.g. name = "implement"`)
	case !namePattern.MatchString(s.Name):
		v.add(at("name"), "stage name %q may only hold letters, digits, '_' and '-'", s.Name)
	case known[s.Name] != "":
		v.add(at("name"), "%q is already a %s of pipeline %q; stage names must be unique and differ from the params", s.Name, known[s.Name], p.Name)
	}
	host, ok := m.Hosts[s.Host]
	switch {
	case s.Host == "":
		v.add(at(), "stage %q needs a host, one of %s", s.Name, names(m.Hosts))
	case !ok:
		v.add(at("host"), "no host %q; name one of %s", s.Host, names(m.Hosts))
	case host.Attached != nil:
		v.add(at("host"), "%q is an attached source: its sessions are started by people, not by agentmux; name a [hosts] entry", s.Host)
	}
	if s.Prompt == "" {
		v.add(at(), `stage %q needs a prompt, e.g. prompt = "Implement: ${%s}"`, s.Name, firstOr(p.Params, "spec"))
	} else if t, err := ParseTemplate(s.Prompt); err != nil {
		v.add(at("prompt"), "%v", err)
	} else {
		s.Template = t
		for _, ref := range t.Refs() {
			if known[ref] != "" {
				continue
			}
			if later := p.Stage(ref); later != nil {
				v.add(at("prompt"), "${%s} names stage %q, which has not run by the time stage %q starts; a prompt can use only earlier stages", ref, ref, s.Name)
				continue
			}
			v.add(at("prompt"), "${%s} names no param or earlier stage of pipeline %q; params: %s", ref, p.Name, strings.Join(p.Params, ", "))
		}
	}
	for j, r := range s.Routes {
		rat := at("routes", strconv.Itoa(j))
		if r.Host != "" {
			v.add(append(rat, "host"), "a stage's route applies to its own host %q; leave host out", s.Host)
		}
		v.route(rat, r, m)
		if host != nil {
			v.sends(append(rat, "type"), host, r.Type)
		}
	}
	s.Result = v.resultSpec(at("result_schema"), at("result_retries"), s.ResultSchema, s.ResultRetries)
	if s.Result == nil && host != nil {
		s.Result = host.Result
	}
}

func firstOr(list []string, def string) string {
	if len(list) > 0 {
		return list[0]
	}
	return def
}
