package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// file is the manifest as written.
type file struct {
	NATS        NATS                   `toml:"nats"`
	Metrics     Metrics                `toml:"metrics"`
	Audit       Audit                  `toml:"audit"`
	Gateway     Gateway                `toml:"gateway"`
	Checkpoints Checkpoints            `toml:"checkpoints"`
	Hosts       map[string]*Host       `toml:"hosts"`
	Agents      map[string]*Host       `toml:"agents"`
	Supervisors map[string]*Supervisor `toml:"supervisors"`
	Routes      []*Route               `toml:"routes"`
	Tools       map[string]*Tool       `toml:"tools"`
	Connections map[string]*Connection `toml:"connections"`
	Pipelines   map[string]*Pipeline   `toml:"pipelines"`
	Notify      map[string]*Notify     `toml:"notify"`
	Attached    map[string]*Attached   `toml:"attached"`
	API         API                    `toml:"api"`
	Console     Console                `toml:"console"`
	Pricing     Pricing                `toml:"pricing"`
	Budgets     Budgets                `toml:"budgets"`
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
	dirAbs, _ := filepath.Abs(filepath.Dir(path))
	v := &validator{file: name, dirAbs: dirAbs, loc: newLocator(src)}
	md, err := v.decode(string(src), &f)
	if err != nil {
		return nil, &Error{Problems: []*Problem{decodeProblem(name, err)}}
	}
	v.md = md
	seen := map[string]bool{}
	for _, key := range md.Undecoded() {
		// A key in an array of tables comes once per table, without the index;
		// arrayPaths finds every table that has it.
		if k := key.String(); !seen[k] && !freeForm(key) {
			seen[k] = true
			for _, at := range v.loc.arrayPaths(key) {
				v.add(at, "unknown key %q; %s", key[len(key)-1], suggestion(key))
			}
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

// knownKeys lists the keys of a section ("hosts", "nats.tls", "stages"), as its struct's
// toml tags name them, in their order: the decoder and the list cannot disagree.
func knownKeys(section string) ([]string, bool) {
	types := map[string]reflect.Type{
		"nats": reflect.TypeFor[NATS](), "nats.users": reflect.TypeFor[User](), "nats.cluster": reflect.TypeFor[Cluster](),
		"nats.tls": reflect.TypeFor[TLS](), "metrics": reflect.TypeFor[Metrics](), "audit": reflect.TypeFor[Audit](), "gateway": reflect.TypeFor[Gateway](), "checkpoints": reflect.TypeFor[Checkpoints](), "hosts": reflect.TypeFor[Host](),
		"supervisors": reflect.TypeFor[Supervisor](), "routes": reflect.TypeFor[Route](), "tools": reflect.TypeFor[Tool](),
		"pipelines": reflect.TypeFor[Pipeline](), "notify": reflect.TypeFor[Notify](), "stages": reflect.TypeFor[Stage](),
		"connections": reflect.TypeFor[Connection](), "attached": reflect.TypeFor[Attached](), "api": reflect.TypeFor[API](),
		"api.tokens": reflect.TypeFor[APIToken](), "connections.rate_limit": reflect.TypeFor[RateLimit](),
	}
	t, ok := types[section]
	if !ok {
		return nil, false
	}
	return tomlKeys(t), true
}

// tomlKeys are the toml keys of struct type t, its embedded structs' in their place.
func tomlKeys(t reflect.Type) []string {
	var keys []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		switch {
		case name == "-":
		case f.Anonymous && f.Type.Kind() == reflect.Struct:
			keys = append(keys, tomlKeys(f.Type)...)
		case name != "":
			keys = append(keys, name)
		}
	}
	return keys
}

// freeFormKeys are the places whose contents are any TOML the user likes: the decoder
// does not mark what is below them as decoded. "*" is any one key.
var freeFormKeys = [][]string{
	{"project"}, {"mcp"},
	{"hosts", "*", "params"}, {"agents", "*", "params"},
	{"hosts", "*", "question_default"}, {"agents", "*", "question_default"},
	{"supervisors", "*", "answers"}, {"supervisors", "*", "rules", "answer"}, // keys of an array of tables carry no index
	{"hosts", "*", "result_schema"}, {"agents", "*", "result_schema"}, {"pipelines", "*", "stages", "result_schema"},
	{"connections", "*", "retry"}, {"connections", "*", "models"},
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
	if len(key) > 2 {
		if _, sub := knownKeys(key[0] + "." + key[1]); sub {
			section = key[0] + "." + key[1]
		}
	}
	if section == "pipelines" && len(key) > 3 && key[2] == "stages" {
		section = "stages"
		if len(key) > 4 && key[3] == "routes" {
			section = "routes"
		}
	}
	keys, ok := knownKeys(section)
	if !ok {
		return "the sections are nats, metrics, audit, gateway, checkpoints, hosts (or agents), attached, supervisors, routes, tools, connections, pipelines, notify, api, console, pricing, budgets, project"
	}
	return "known keys here: " + strings.Join(keys, ", ")
}

type validator struct {
	file     string
	dirAbs   string // the manifest's folder, absolute: where "/x" permission paths start
	loc      *locator
	md       toml.MetaData // what the manifest wrote, to tell a 0 written from one left out
	problems []*Problem
	warnings []*Problem
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
		Audit:       f.Audit,
		Gateway:     f.Gateway,
		Checkpoints: f.Checkpoints,
		Hosts:       map[string]*Host{},
		Supervisors: map[string]*Supervisor{},
		Tools:       map[string]*Tool{},
		Connections: map[string]*Connection{},
		Pipelines:   map[string]*Pipeline{},
		Notify:      map[string]*Notify{},
		Attached:    map[string]*Attached{},
		API:         f.API,
		Console:     f.Console,
	}
	if m.NATS.URL == "" && m.NATS.Listen == "" {
		m.NATS.Listen = DefaultNATSListen
	}
	v.nats(&m.NATS)
	if m.Metrics.Addr == "" {
		m.Metrics.Addr = DefaultMetricsAddr
	}
	v.audit(&m.Audit)
	v.gateway(&m.Gateway)
	v.checkpoints(&m.Checkpoints)
	v.hosts(path, f, m)
	v.api(&m.API)
	v.console(&m.Console)
	v.pricing(f.Pricing)
	m.Pricing = f.Pricing
	v.budgets(&f.Budgets)
	m.Budgets = f.Budgets
	v.deciders(path, f, m)
	for i, r := range f.Routes {
		v.route([]string{"routes", strconv.Itoa(i)}, r, m)
		m.Routes = append(m.Routes, r)
	}
	for name, p := range f.Pipelines {
		p.Name = name
		v.pipeline(p, m)
		m.Pipelines[name] = p
	}
	for name, n := range f.Notify {
		n.Name = name
		v.notify(n)
		m.Notify[name] = n
	}
	v.security(m)
	v.noChildSecrets(m)
	if len(m.Hosts) == 0 && len(m.Supervisors) == 0 {
		v.add(nil, "the manifest has neither hosts nor supervisors: add a [hosts.X] with a command, or a [supervisors.X], for a node to have something to do")
	}
	m.Warnings = v.warnings
	return m
}

// hosts checks and takes f's hosts, under [hosts] and [agents], and its attached
// sources, into m.
func (v *validator) hosts(path string, f *file, m *Manifest) {
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
	for name, a := range f.Attached {
		a.Name = name
		v.attached(a, m)
		m.Attached[name] = a
	}
}

// deciders checks and takes f's connections, tools and supervisors into m.
func (v *validator) deciders(path string, f *file, m *Manifest) {
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
	if !v.written(section, h.Name, "checkpoint") {
		h.Checkpoint = true
	}
	if h.QuestionDefault == nil {
		h.QuestionDefault = ""
	}
	h.QuestionDefaultJSON = v.toJSON(at("question_default"), h.QuestionDefault)
	if len(h.Params) > 0 {
		h.ParamsJSON = v.toJSON(at("params"), h.Params)
	}
	// One rule for every duration: left out, it is the default; 0 means none, where
	// none means something, and is refused where a bound is needed.
	v.required(at("init_timeout"), &h.InitTimeout, DefaultInitTimeout, "would wait for init_ack forever")
	v.required(at("question_timeout"), &h.QuestionTimeout, DefaultQuestionTimeout, "would leave requests without a deadline")
	if !v.written(at("stop_grace")...) {
		h.StopGrace = Duration(DefaultStopGrace) // 0 written: SIGKILL right after SIGTERM
	}
	if !v.written(at("checkpoint_interval")...) {
		h.CheckpointInterval = Duration(DefaultCheckpointInterval) // 0 written: at safe points only
	}
	v.enum(at("on_limit"), &h.OnLimit, OnLimitPause, "an on_limit", OnLimitPause, OnLimitFail)
	v.required(at("max_pause"), &h.MaxPause, DefaultMaxPause, "would fail every session at a usage limit; on_limit = \"fail\" says that")
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
	if h.Nice < 0 || h.Nice > 19 {
		v.add(at("nice"), "%d is out of range; use 0 (the node's own priority) to 19 (the lowest): a node lowers its agents' priority, never raises it", h.Nice)
	}
	if h.Retries < 0 {
		v.add(at("retries"), "%d is negative; use 0 for no retries", h.Retries)
	}
	v.hostResult(at, h)
	v.budget([]string{section, h.Name, "budget"}, h.Budget)
	v.process([]string{section, h.Name}, &h.Process, manifestPath)
	v.workspace(at, h, manifestPath)
}

// process checks how a program runs, the same for agents, command supervisors and
// tools: its inherited variables' names, its working directory (made absolute), and
// whether its command and directory exist here.
func (v *validator) process(path []string, p *Process, manifestPath string) {
	v.envNames(append(append([]string{}, path...), "inherit_env"), p.InheritEnv)
	p.WorkingDir = v.dir(p.WorkingDir, manifestPath)
	if p.Command != "" {
		v.runnable(path, p.Command, p.WorkingDir)
		v.script(path, p.Command, p.Args, p.WorkingDir)
	}
	v.sandbox(path, p, manifestPath)
}

// sandbox checks a program's sandbox keys and makes their paths absolute. A writable
// path missing here is a warning, as a working directory is: the manifest may be
// meant for another machine.
func (v *validator) sandbox(path []string, p *Process, manifestPath string) {
	at := func(key string) []string { return append(append([]string{}, path...), key) }
	switch p.Sandbox {
	case "", SandboxLandlock, SandboxNone:
	default:
		v.add(at("sandbox"), "%q is not a sandbox; use %q (the default where the kernel has it) or %q", p.Sandbox, SandboxLandlock, SandboxNone)
	}
	if p.User != "" && p.User != "root" && p.User != "0" && p.Sandbox == SandboxNone {
		v.add(at("user"), "%q needs the sandbox, which starts the program as its user: leave sandbox out, or user (only \"root\" goes with sandbox = \"none\")", p.User)
	}
	home, _ := os.UserHomeDir()
	abs := func(key string, paths []string) {
		for i, p := range paths {
			if rest, ok := strings.CutPrefix(p, "~/"); ok && home != "" {
				p = filepath.Join(home, rest)
			}
			if p == "" {
				v.add(at(key), "an empty path; name a file or a directory")
				continue
			}
			paths[i] = filepath.Clean(v.dir(p, manifestPath))
		}
	}
	abs("sandbox_write", p.SandboxWrite)
	abs("sandbox_read_deny", p.SandboxReadDeny)
	for _, w := range p.SandboxWrite {
		if _, err := os.Stat(w); err != nil {
			v.warn(at("sandbox_write"), "%q does not exist here; the program cannot start in its sandbox until it does", w)
		}
	}
}

// runnable warns when command cannot be found or its working directory does not
// exist: the manifest may be meant for another machine, so it is not an error.
func (v *validator) runnable(path []string, command, dir string) {
	if dir != "" {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			v.warn(append(path, "working_dir"), "%q is not a directory here", dir)
			return
		}
	}
	if strings.ContainsRune(command, filepath.Separator) {
		p := command
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			v.warn(append(path, "command"), "%q does not exist here", command)
		}
		return
	}
	if _, err := exec.LookPath(command); err != nil {
		v.warn(append(path, "command"), "%q is not on PATH here", command)
	}
}

// script warns when an interpreter's script (node dist/agent.js, python3 worker.py) does
// not exist where the program starts: the agent would die at its start, saying little.
func (v *validator) script(path []string, command string, args []string, dir string) {
	switch strings.TrimSuffix(filepath.Base(command), ".exe") {
	case "node", "nodejs", "bun", "deno", "tsx", "ts-node", "python", "python3", "ruby", "perl", "bash", "sh":
	default:
		return
	}
	for i, arg := range args {
		switch filepath.Ext(arg) {
		case ".js", ".mjs", ".cjs", ".ts", ".mts", ".py", ".rb", ".pl", ".sh":
		default:
			continue
		}
		p := arg
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if _, err := os.Stat(p); err != nil {
			hint := ""
			if ext := filepath.Ext(arg); (ext == ".js" || ext == ".mjs" || ext == ".cjs") && strings.Contains(filepath.ToSlash(arg), "dist/") {
				hint = " (a build's output: build it first, e.g. npm run build)"
			}
			v.warn(append(path, "args"), "args[%d] %q does not exist here: %s would stop at its start%s", i, arg, command, hint)
		}
		return
	}
}

func (v *validator) warn(path []string, format string, args ...any) {
	line, col := v.loc.find(path)
	v.warnings = append(v.warnings, &Problem{File: v.file, Line: line, Col: col, Key: strings.Join(path, "."), Msg: fmt.Sprintf(format, args...)})
}

// audit gives [audit] its defaults and checks its sizes.
func (v *validator) audit(a *Audit) {
	if !v.written("audit", "max_age") {
		a.MaxAge = Duration(DefaultAuditMaxAge)
	}
	if !v.written("audit", "events_max_age") {
		a.EventsMaxAge = Duration(DefaultEventsMaxAge)
	}
	if !v.written("audit", "keep_events") {
		a.KeepEvents = true
	}
	for key, n := range map[string]int64{"max_bytes": a.MaxBytes, "events_max_bytes": a.EventsMaxBytes} {
		if n < 0 {
			v.add([]string{"audit", key}, "%d is negative; use a number of bytes, or 0 for no limit of size", n)
		}
	}
}

// checkpoints gives [checkpoints] its defaults and checks its sizes.
func (v *validator) checkpoints(c *Checkpoints) {
	if !v.written("checkpoints", "max_age") {
		c.MaxAge = Duration(DefaultCheckpointMaxAge)
	}
	if c.MaxCheckpointBytes == 0 {
		c.MaxCheckpointBytes = DefaultMaxCheckpointBytes
	}
	if c.Keep == 0 {
		c.Keep = DefaultCheckpointsKept
	}
	for key, n := range map[string]int64{"max_bytes": c.MaxBytes, "max_checkpoint_bytes": c.MaxCheckpointBytes, "keep": int64(c.Keep)} {
		if n < 0 {
			v.add([]string{"checkpoints", key}, "%d is negative", n)
		}
	}
	if c.MaxBytes > 0 && c.MaxCheckpointBytes > c.MaxBytes {
		v.add([]string{"checkpoints", "max_checkpoint_bytes"}, "%d is more than max_bytes (%d), which holds them all", c.MaxCheckpointBytes, c.MaxBytes)
	}
}

// gateway gives [gateway] its default and checks what it records.
func (v *validator) gateway(g *Gateway) {
	switch g.Record {
	case "":
		g.Record = RecordNone
	case RecordNone, RecordMetadata, RecordFull:
	default:
		v.add([]string{"gateway", "record"}, `unknown %q; use "none", "metadata" (an audit record of each model call) or "full" (and its bodies, for operators)`, g.Record)
	}
}

// written reports whether the manifest sets the key at path (hosts under [agents] too).
func (v *validator) written(path ...string) bool {
	if v.md.IsDefined(path...) {
		return true
	}
	if len(path) > 0 && path[0] == "hosts" {
		return v.md.IsDefined(append([]string{"agents"}, path[1:]...)...)
	}
	return false
}

// required gives d its default when left out, and refuses a written 0.
func (v *validator) required(path []string, d *Duration, def time.Duration, why string) {
	switch {
	case !v.written(path...):
		*d = Duration(def)
	case *d == 0:
		v.add(path, "0 %s; leave it out for the default %v, or give a duration", why, def)
	}
}

func (v *validator) toJSON(path []string, value any) json.RawMessage {
	b, err := json.Marshal(value)
	if err != nil {
		v.add(path, "cannot be sent as JSON: %v", err)
		return nil
	}
	return b
}

var requestTypes = []string{"question", "approval", "tool_call", "budget"}

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
	v.add(path, "%q is not a request type; use question, approval, tool_call or budget", typ)
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
