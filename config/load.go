package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// file is the manifest as written.
type file struct {
	NATS        NATS                   `toml:"nats"`
	Metrics     Metrics                `toml:"metrics"`
	Hosts       map[string]*Host       `toml:"hosts"`
	Agents      map[string]*Host       `toml:"agents"`
	Supervisors map[string]*Supervisor `toml:"supervisors"`
	Routes      []*Route               `toml:"routes"`
	Tools       map[string]*Tool       `toml:"tools"`
	Connections map[string]*Connection `toml:"connections"`
	Project     map[string]any         `toml:"project"` // Concerto's; ignored
	MCP         map[string]any         `toml:"mcp"`     // Concerto's; ignored
}

// Load reads and validates the manifest at path.
func Load(path string) (*Manifest, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: read manifest: %w", err)
	}
	return Parse(path, src)
}

// Parse decodes and validates a manifest held in memory; path is used in messages and
// to resolve relative working directories.
func Parse(path string, src []byte) (*Manifest, error) {
	name := filepath.Base(path)
	var f file
	md, err := toml.Decode(string(src), &f)
	if err != nil {
		return nil, &Error{Problems: []*Problem{decodeProblem(name, err)}}
	}
	v := &validator{file: name, loc: newLocator(src)}
	for _, key := range md.Undecoded() {
		if !freeForm(key) {
			v.add(key, "unknown key %q; %s", key[len(key)-1], suggestion(key))
		}
	}
	m := v.manifest(path, &f)
	if len(v.problems) > 0 {
		sort.SliceStable(v.problems, func(i, j int) bool {
			a, b := v.problems[i], v.problems[j]
			return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
		})
		return nil, &Error{Problems: v.problems}
	}
	return m, nil
}

func decodeProblem(file string, err error) *Problem {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		msg := pe.Message
		if pe.Usage != "" {
			msg += "; " + strings.TrimSpace(pe.Usage)
		}
		return &Problem{File: file, Line: pe.Position.Line, Col: pe.Position.Col, Key: pe.LastKey, Msg: msg}
	}
	return &Problem{File: file, Msg: err.Error()}
}

var known = map[string][]string{
	"nats":        {"url", "listen", "store_dir", "credentials", "server_name", "replicas", "sync_interval", "cluster", "users", "user", "password_env", "nkey_seed_file", "tls"},
	"metrics":     {"addr", "token_env"},
	"hosts":       {"command", "args", "env", "inherit_env", "working_dir", "dialect", "input_format", "plain_text", "timeout", "idle_timeout", "init_timeout", "question_timeout", "stop_grace", "question_default", "approval_default", "max_line_bytes", "pool", "retries", "params", "transport", "output_format"},
	"supervisors": {"strategy", "concurrency", "rules", "answers", "connection", "model", "system_prompt", "temperature", "max_tokens", "memory", "command", "args", "env", "inherit_env", "working_dir", "timeout", "fallback", "escalate"},
	"routes":      {"type", "host", "match", "supervisor", "post_process"},
	"tools":       {"command", "args", "env", "inherit_env", "working_dir", "timeout", "description"},
	"connections": {"provider", "api_key_env", "base_url", "default_model", "timeout", "organization", "project", "models", "retry", "rate_limit"},
}

// freeFormKeys are the places whose contents are any TOML the user likes: the decoder
// does not mark what is below them as decoded. "*" is any one key.
var freeFormKeys = [][]string{
	{"project"}, {"mcp"},
	{"hosts", "*", "params"}, {"agents", "*", "params"},
	{"hosts", "*", "question_default"}, {"agents", "*", "question_default"},
	{"supervisors", "*", "answers"}, {"supervisors", "*", "rules", "answer"}, // keys of an array of tables carry no index
	{"connections", "*", "retry"}, {"connections", "*", "rate_limit"}, {"connections", "*", "models"},
}

func freeForm(key toml.Key) bool {
	for _, pattern := range freeFormKeys {
		if len(key) <= len(pattern) {
			continue
		}
		match := true
		for i, p := range pattern {
			if p != "*" && p != key[i] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

func suggestion(key toml.Key) string {
	section := key[0]
	if section == "agents" {
		section = "hosts"
	}
	keys, ok := known[section]
	if !ok {
		return "the sections are nats, metrics, hosts (or agents), supervisors, routes, tools, connections, project"
	}
	return "known keys here: " + strings.Join(keys, ", ")
}

type validator struct {
	file     string
	loc      *locator
	problems []*Problem
}

func (v *validator) add(path []string, format string, args ...any) {
	line, col := v.loc.find(path)
	v.problems = append(v.problems, &Problem{File: v.file, Line: line, Col: col, Key: strings.Join(path, "."), Msg: fmt.Sprintf(format, args...)})
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func (v *validator) manifest(path string, f *file) *Manifest {
	m := &Manifest{
		Path:        path,
		NATS:        f.NATS,
		Metrics:     f.Metrics,
		Hosts:       map[string]*Host{},
		Supervisors: map[string]*Supervisor{},
		Tools:       map[string]*Tool{},
		Connections: map[string]*Connection{},
	}
	if m.NATS.URL == "" && m.NATS.Listen == "" {
		m.NATS.Listen = DefaultNATSListen
	}
	v.nats(&m.NATS)
	if m.Metrics.Addr == "" {
		m.Metrics.Addr = DefaultMetricsAddr
	}
	for section, hosts := range map[string]map[string]*Host{"hosts": f.Hosts, "agents": f.Agents} {
		for name, h := range hosts {
			if _, dup := m.Hosts[name]; dup {
				v.add([]string{section, name}, "host %q is defined under both [hosts] and [agents]; keep one", name)
				continue
			}
			h.Name = name
			v.host(section, path, h)
			m.Hosts[name] = h
		}
	}
	for name, c := range f.Connections {
		c.Name = name
		v.connection(c)
		m.Connections[name] = c
	}
	for name, t := range f.Tools {
		t.Name = name
		v.tool(t, path)
		m.Tools[name] = t
	}
	for name, s := range f.Supervisors {
		s.Name = name
		m.Supervisors[name] = s
	}
	for _, s := range m.Supervisors {
		v.supervisor(s, m)
	}
	v.fallbackCycles(m)
	for i, r := range f.Routes {
		v.route(i, r, m)
		m.Routes = append(m.Routes, r)
	}
	v.security(m)
	v.noChildSecrets(m)
	return m
}

func (v *validator) host(section, manifestPath string, h *Host) {
	at := func(key string) []string { return []string{section, h.Name, key} }
	if !namePattern.MatchString(h.Name) {
		v.add([]string{section, h.Name}, "host name %q may only hold letters, digits, '_' and '-' (it is part of NATS subjects)", h.Name)
	}
	if h.Command == "" {
		v.add([]string{section, h.Name}, `a host needs a command, e.g. command = "python3"`)
	}
	if h.Transport != "" && h.Transport != "stdio" {
		v.add(at("transport"), `%q is not supported; the only transport is "stdio"`, h.Transport)
	}
	switch h.Dialect {
	case "":
		h.Dialect = "ndjson"
	case "ndjson":
	case "claude-code", "acp", "codex":
	default:
		v.add(at("dialect"), `unknown dialect %q; use "ndjson", "claude-code", "acp" or "codex"`, h.Dialect)
	}
	v.enum(at("input_format"), &h.InputFormat, "json", "an input format", "json", "text")
	v.enum(at("output_format"), &h.OutputFormat, "", "an output format", "", "json", "text")
	v.enum(at("plain_text"), &h.PlainText, "result", "a plain_text mode", "result", "log")
	v.enum(at("approval_default"), &h.ApprovalDefault, "no", "an approval answer", "yes", "no")
	h.ApprovalDefaultJSON, _ = json.Marshal(h.ApprovalDefault)
	if h.QuestionDefault == nil {
		h.QuestionDefault = ""
	}
	h.QuestionDefaultJSON = v.toJSON(at("question_default"), h.QuestionDefault)
	if len(h.Params) > 0 {
		h.ParamsJSON = v.toJSON(at("params"), h.Params)
	}
	if h.InitTimeout == 0 {
		h.InitTimeout = Duration(DefaultInitTimeout)
	}
	if h.QuestionTimeout == 0 {
		h.QuestionTimeout = Duration(DefaultQuestionTimeout)
	}
	if h.StopGrace == 0 {
		h.StopGrace = Duration(DefaultStopGrace)
	}
	switch {
	case h.MaxLineBytes == 0:
		h.MaxLineBytes = DefaultMaxLineBytes
	case h.MaxLineBytes < 1024:
		v.add(at("max_line_bytes"), "%d is too small; use at least 1024 (the default is %d)", h.MaxLineBytes, DefaultMaxLineBytes)
	}
	switch {
	case h.Pool == 0:
		h.Pool = 1
	case h.Pool < 0:
		v.add(at("pool"), "%d is negative; use the number of processes to keep, ≥ 1", h.Pool)
	}
	if h.Retries < 0 {
		v.add(at("retries"), "%d is negative; use 0 for no retries", h.Retries)
	}
	v.envNames(at("inherit_env"), h.InheritEnv)
	h.WorkingDir = v.dir(h.WorkingDir, manifestPath)
}

func (v *validator) toJSON(path []string, value any) json.RawMessage {
	b, err := json.Marshal(value)
	if err != nil {
		v.add(path, "cannot be sent as JSON: %v", err)
		return nil
	}
	return b
}

var requestTypes = []string{"question", "approval", "tool_call"}

// enum sets *value to def when it is empty, and reports it unless it is one of allowed.
func (v *validator) enum(path []string, value *string, def, what string, allowed ...string) {
	if *value == "" {
		*value = def
	}
	if !slices.Contains(allowed, *value) {
		quoted := make([]string, 0, len(allowed))
		for _, a := range allowed {
			if a != "" {
				quoted = append(quoted, strconv.Quote(a))
			}
		}
		v.add(path, "%q is not %s; use %s", *value, what, strings.Join(quoted, " or "))
	}
}

// requestType reports typ unless it is a request type (or empty, when optional); it says
// whether typ is usable.
func (v *validator) requestType(path []string, typ string, optional bool) bool {
	if typ == "" && optional || slices.Contains(requestTypes, typ) {
		return true
	}
	v.add(path, "%q is not a request type; use question, approval or tool_call", typ)
	return false
}

func names[T any](m map[string]T) string {
	if len(m) == 0 {
		return "(none defined)"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return strings.Join(keys, ", ")
}
