package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/agentmux/agentmux/permission"
)

func (v *validator) supervisor(s *Supervisor, m *Manifest) {
	at := func(key ...string) []string { return append([]string{"supervisors", s.Name}, key...) }
	if !namePattern.MatchString(s.Name) {
		v.add(at(), "supervisor name %q may only hold letters, digits, '_' and '-' (it is part of NATS subjects)", s.Name)
	}
	switch {
	case s.Concurrency == 0:
		s.Concurrency = DefaultConcurrency
	case s.Concurrency < 0:
		v.add(at("concurrency"), "%d is negative; use the number of decisions to run at once", s.Concurrency)
	}
	if s.Timeout < 0 {
		v.add(at("timeout"), "a negative timeout; leave it out to use the request's deadline")
	}
	switch s.Strategy {
	case StrategyRule:
		v.rules(s, at)
	case StrategyStatic:
		v.staticAnswers(s, at)
	case StrategyLLM:
		v.llm(s, m, at)
	case StrategyCommand:
		if s.Command == "" {
			v.add(at(), `a command supervisor needs a command, e.g. command = "python3", args = ["decide.py"]`)
		}
		v.process(at(), &s.Process, m.Path)
	case StrategyHuman, StrategyExternal:
	case "":
		v.add(at(), `a supervisor needs a strategy: "rule", "static", "llm", "command", "human" or "external"`)
	default:
		v.add(at("strategy"), "unknown strategy %q; use rule, static, llm, command, human or external", s.Strategy)
	}
	if s.RulesFile != "" && s.Strategy != StrategyRule {
		v.add(at("rules_file"), "a rules file holds permission rules, which only a rule supervisor checks; this one is %s", s.Strategy)
	}
	if s.Fallback != "" {
		switch f, ok := m.Supervisors[s.Fallback]; {
		case !ok:
			v.add(at("fallback"), "no supervisor %q; name one of %s", s.Fallback, names(m.Supervisors))
		case f.Strategy == StrategyExternal:
			v.add(at("fallback"), "supervisor %q is external; a fallback runs in this process: use a rule, static, llm, command or human one", s.Fallback)
		}
	}
	if s.Escalate != nil {
		v.escalate(s, m, at)
	}
}

func (v *validator) rules(s *Supervisor, at func(...string) []string) {
	v.permissions(s, at)
	if len(s.Rules) == 0 && s.Permissions.Empty() && s.RulesFile == "" {
		v.add(at(), `a rule supervisor needs rules, e.g. rules = [{ match = "(?i)token", answer = "…" }], or permissions: allow = ["Bash(npm run test:*)"]`)
	}
	for i, r := range s.Rules {
		rp := at("rules", strconv.Itoa(i))
		v.requestType(append(rp, "type"), r.Type, true)
		r.Re = v.regexp(append(rp, "match"), r.Match)
		if r.Answer == nil {
			v.add(rp, "a rule needs an answer")
			continue
		}
		r.AnswerJSON = v.toJSON(append(rp, "answer"), r.Answer)
		v.enum(append(rp, "scope"), &r.Scope, "request", "a scope", "request", "session")
	}
}

// rulesFile adds the rules of s's rules file to set, after the manifest's own.
func (v *validator) rulesFile(s *Supervisor, set *permission.Set, paths permission.Paths, at func(...string) []string) {
	s.RulesPath = s.RulesFile
	if !filepath.IsAbs(s.RulesPath) {
		s.RulesPath = filepath.Join(v.dirAbs, s.RulesPath)
	}
	f, err := permission.ReadFile(s.RulesPath)
	if err != nil {
		v.add(at("rules_file"), "%v", err)
		return
	}
	if st, err := os.Stat(filepath.Dir(s.RulesPath)); err != nil || !st.IsDir() {
		v.warn(at("rules_file"), "its folder %s is not there: a rule people save will not be written until it is", filepath.Dir(s.RulesPath))
	}
	for _, verdict := range permission.Verdicts() {
		for _, rule := range f.Rules(verdict) {
			if err := set.Add(verdict, []string{rule}, paths); err != nil {
				v.add(at("rules_file"), "%s, %s: %v", s.RulesPath, verdict, err)
			}
		}
	}
}

func (v *validator) staticAnswers(s *Supervisor, at func(...string) []string) {
	if len(s.Answers) == 0 {
		v.add(at(), `a static supervisor needs answers, e.g. answers = { question = "…", approval = "no" }`)
	}
	s.AnswersJSON = map[string]json.RawMessage{}
	for typ, answer := range s.Answers {
		if v.requestType(at("answers", typ), typ, false) {
			s.AnswersJSON[typ] = v.toJSON(at("answers", typ), answer)
		}
	}
}

func (v *validator) llm(s *Supervisor, m *Manifest, at func(...string) []string) {
	c, ok := m.Connections[s.Connection]
	switch {
	case s.Connection == "":
		v.add(at(), `an llm supervisor needs a connection, e.g. connection = "openai" with a [connections.openai] table`)
	case !ok:
		v.add(at("connection"), "no connection %q; define [connections.%s] or name one of %s", s.Connection, s.Connection, names(m.Connections))
	case c.Provider == ProviderGemini:
		v.add(at("connection"), `connection %q is gemini, which only agents reach (through the gateway): an llm supervisor speaks Chat Completions or Messages; reach Gemini by its OpenAI-compatible API, provider = "openai-compatible", base_url = "https://generativelanguage.googleapis.com/v1beta/openai"`, c.Name)
	default:
		s.Conn = c
		s.ModelID = s.Model
		if alias, ok := c.Models[s.Model]; ok {
			s.ModelID = alias
		}
		if s.ModelID == "" {
			s.ModelID = c.DefaultModel
		}
		if s.ModelID == "" {
			v.add(at(), "no model: set model here or default_model on [connections.%s]", c.Name)
		}
	}
	if t := s.Temperature; t != nil && (*t < 0 || *t > 2) {
		v.add(at("temperature"), "%v is out of range; use 0 to 2", *t)
	}
	switch {
	case s.MaxTokens == 0:
		s.MaxTokens = DefaultMaxTokens
	case s.MaxTokens < 0:
		v.add(at("max_tokens"), "%d is negative", s.MaxTokens)
	}
	v.enum(at("memory"), &s.Memory, "", "a memory mode", "", "session")
}

func (v *validator) escalate(s *Supervisor, m *Manifest, at func(...string) []string) {
	e := s.Escalate
	if s.Strategy != StrategyLLM && s.Strategy != StrategyRule {
		v.add(at("escalate"), "escalate works on llm and rule supervisors, not %s", s.Strategy)
	}
	switch to, ok := m.Supervisors[e.To]; {
	case e.To == "":
		v.add(at("escalate"), `escalate needs to = "<human supervisor>"`)
	case !ok:
		v.add(at("escalate", "to"), "no supervisor %q; name one of %s", e.To, names(m.Supervisors))
	case to.Strategy != StrategyHuman:
		v.add(at("escalate", "to"), "supervisor %q is %s; escalate to a human supervisor", e.To, to.Strategy)
	}
	if e.When == "" && len(e.RiskLevel) == 0 && s.Permissions.Empty() {
		v.add(at("escalate"), `escalate needs when = "<regex>" or risk_level = ["high", "critical"] (or, on a rule supervisor, ask permission rules)`)
	}
	if e.When != "" {
		e.Re = v.regexp(at("escalate", "when"), e.When)
	}
	for _, r := range e.RiskLevel {
		if !slices.Contains(RiskLevels(), r) {
			v.add(at("escalate", "risk_level"), "%q is not a risk level; use %s", r, strings.Join(RiskLevels(), ", "))
		}
	}
	if len(e.RiskLevel) > 0 && s.Strategy != StrategyLLM {
		v.add(at("escalate", "risk_level"), "only an llm supervisor rates risk; use when = \"<regex>\" on a %s supervisor", s.Strategy)
	}
}

// fallbackCycles reports supervisors whose fallbacks lead back to themselves.
func (v *validator) fallbackCycles(m *Manifest) {
	for _, s := range m.Supervisors {
		seen := map[string]bool{s.Name: true}
		for next := s.Fallback; next != ""; {
			if seen[next] {
				v.add([]string{"supervisors", s.Name, "fallback"}, "fallbacks form a cycle through %q; end the chain at a supervisor without a fallback", next)
				break
			}
			seen[next] = true
			f, ok := m.Supervisors[next]
			if !ok {
				break
			}
			next = f.Fallback
		}
	}
}

// route validates a route written at base: one of [[routes]], or of a stage's routes.
func (v *validator) route(base []string, r *Route, m *Manifest) {
	at := func(key ...string) []string { return append(append([]string{}, base...), key...) }
	if r.Supervisor == "" {
		v.add(at(), `a route needs a supervisor, e.g. supervisor = "default"`)
	} else if s, ok := m.Supervisors[r.Supervisor]; !ok {
		v.add(at("supervisor"), "no supervisor %q; define [supervisors.%s] or name one of %s", r.Supervisor, r.Supervisor, names(m.Supervisors))
	} else {
		r.External = s.Strategy == StrategyExternal
		r.Failover = !r.External
	}
	v.requestType(at("type"), r.Type, true)
	if r.Host != "" {
		if h, ok := m.Hosts[r.Host]; !ok {
			v.add(at("host"), "no host %q; name one of %s", r.Host, names(m.Hosts))
		} else {
			v.sends(at("type"), h, r.Type)
		}
	}
	if r.Match != "" {
		r.Re = v.regexp(at("match"), r.Match)
	}
	if r.PostProcess {
		if s, ok := m.Supervisors[r.Supervisor]; ok && s.Strategy != StrategyLLM {
			v.add(at("post_process"), "post_process needs an llm supervisor; %q is %s", r.Supervisor, s.Strategy)
		}
	}
	if r.Shadow != "" {
		s, ok := m.Supervisors[r.Shadow]
		switch {
		case !ok:
			v.add(at("shadow"), "no supervisor %q; define [supervisors.%s] or name one of %s", r.Shadow, r.Shadow, names(m.Supervisors))
		case r.Shadow == r.Supervisor:
			v.add(at("shadow"), "%q is the route's supervisor: a shadow is another supervisor, compared with it", r.Shadow)
		case s.Strategy == StrategyHuman || s.Escalate != nil:
			v.add(at("shadow"), "supervisor %q would hand requests to a person, who would answer in vain: a shadow's answer is never given; shadow a rule, static, command, llm or external supervisor that does not escalate", r.Shadow)
		default:
			r.ShadowExternal = s.Strategy == StrategyExternal
			r.promoted = promote(r, s, m.Supervisors[r.Supervisor])
		}
	}
}

// promote is r with its shadow, whose supervisor is shadow, promoted: the shadow
// decides, and r's supervisor, sup, shadows it if a shadow may be what sup is.
func promote(r *Route, shadow, sup *Supervisor) *Route {
	p := *r
	p.Supervisor, p.External, p.Failover = r.Shadow, r.ShadowExternal, !r.ShadowExternal
	p.PostProcess = r.PostProcess && shadow.Strategy == StrategyLLM
	p.Shadow, p.ShadowExternal = "", false
	if sup != nil && sup.Strategy != StrategyHuman && sup.Escalate == nil {
		p.Shadow, p.ShadowExternal = r.Supervisor, r.External
	}
	p.promoted = nil
	return &p
}

func (v *validator) tool(t *Tool, manifestPath string) {
	at := func(key ...string) []string { return append([]string{"tools", t.Name}, key...) }
	if !namePattern.MatchString(t.Name) {
		v.add(at(), "tool name %q may only hold letters, digits, '_' and '-' (it is part of NATS subjects)", t.Name)
	}
	v.required(at("timeout"), &t.Timeout, DefaultToolTimeout, "would let a tool call run forever")
	v.process(at(), &t.Process, manifestPath)
}

func (v *validator) connection(c *Connection) {
	at := func(key ...string) []string { return append([]string{"connections", c.Name}, key...) }
	switch {
	case c.Provider == "":
		v.add(at(), `a connection needs a provider, e.g. provider = "openai" or "anthropic"`)
	case c.Provider != ProviderAnthropic && c.Provider != ProviderGemini && !OpenAICompatible(c.Provider):
		v.add(at("provider"), `unknown provider %q; use "anthropic", "gemini", or "openai" (also for any Chat Completions server: vllm, ollama, a gateway with base_url)`, c.Provider)
	}
	if c.Timeout < 0 {
		v.add(at("timeout"), "a negative timeout")
	}
	if strings.ContainsAny(c.APIKeyEnv, "=\x00 ") {
		v.add(at("api_key_env"), "%q is not an environment variable name", c.APIKeyEnv)
	}
	// Concerto's keys agentmux reads but does not act on: said, so nobody relies on them.
	if c.Retry != nil {
		v.warn(at("retry"), "accepted as Concerto has it, and not used: a model's call is retried by its SDK (twice), and its supervisor falls back within the request's deadline")
	}
	if r := c.RateLimit; r != nil {
		for _, f := range []struct {
			key string
			n   int
		}{{"requests_per_minute", r.RequestsPerMinute}, {"burst", r.Burst}, {"concurrency", r.Concurrency}} {
			if f.n < 0 {
				v.add(at("rate_limit", f.key), "%d is negative: give 0 (no limit) or more", f.n)
			}
		}
		if r.Burst == 0 && r.RequestsPerMinute > 0 {
			r.Burst = max(r.RequestsPerMinute/10, 1)
		}
	}
}

func (v *validator) regexp(path []string, expr string) *regexp.Regexp {
	re, err := regexp.Compile(expr)
	if err != nil {
		v.add(path, "%q is not a regular expression: %v", expr, err)
	}
	return re
}

func (v *validator) envNames(path []string, names []string) {
	for _, name := range names {
		if name == "" || strings.ContainsAny(name, "=\x00") {
			v.add(path, "%q is not an environment variable name", name)
		}
	}
}

// dir resolves a working directory against the manifest's folder.
func (v *validator) dir(dir, manifestPath string) string {
	if dir == "" || filepath.IsAbs(dir) {
		return dir
	}
	return filepath.Join(filepath.Dir(manifestPath), dir)
}

// permissions parses a rule supervisor's allow, ask and deny lists and its import; a
// rule's "/x" paths start at the manifest's folder, an imported file's at its project.
func (v *validator) permissions(s *Supervisor, at func(...string) []string) {
	home, _ := os.UserHomeDir()
	set := &permission.Set{}
	paths := permission.Paths{Root: v.dirAbs, Home: home}
	for _, l := range []struct {
		key   string
		v     permission.Verdict
		rules []string
	}{{"deny", permission.Deny, s.Deny}, {"ask", permission.Ask, s.Ask}, {"allow", permission.Allow, s.Allow}} {
		for i, text := range l.rules {
			if err := set.Add(l.v, []string{text}, paths); err != nil {
				v.add(at(l.key, strconv.Itoa(i)), "%v", err)
			}
		}
	}
	if s.Import != "" {
		path := s.Import
		if !filepath.IsAbs(path) {
			path = filepath.Join(v.dirAbs, path)
		}
		if err := set.Import(path, home); err != nil {
			v.add(at("import"), "%v; import names a Claude Code settings file, e.g. import = \".claude/settings.json\"", err)
		}
	}
	if s.RulesFile != "" {
		v.rulesFile(s, set, paths, at)
	}
	if !set.Empty() {
		s.Permissions = set
		if len(set.Ask) > 0 && s.Escalate == nil && s.Fallback == "" {
			v.warn(at("ask"), "ask rules, and approvals no rule covers, get the host's default: give the supervisor escalate or fallback to ask someone")
		}
	}
}
