package config

import (
	"encoding/json"
	"time"
)

// Defaults of an [attached.X] source.
const (
	DefaultAttachedIdle        = time.Hour
	DefaultAttachedMaxSessions = 1000
)

// Dialects an attached source can speak: the hooks of these CLIs.
const (
	AttachedClaudeCode = "claude-code"
	AttachedCodex      = "codex"
)

// What an attached agent's hook does when agentmux cannot decide for it.
const (
	UnreachableDeny = "deny" // the host's default, fail closed
	UnreachableAsk  = "ask"  // the agent's own prompt, to the person at it
)

// Attached is a source of agent sessions agentmux did not start ([attached.X]): Claude
// Code or Codex run by people, whose hooks put their approvals to the fleet through
// the console's API. Each of their sessions is an agentmux session of a host named for
// the source, so routes match host = X and the host's deadlines and defaults apply.
type Attached struct {
	Name            string   `toml:"-"`
	Dialect         string   `toml:"dialect"`
	QuestionTimeout Duration `toml:"question_timeout"`
	ApprovalDefault string   `toml:"approval_default"`
	// Unreachable is what the hook answers when no node decides in time: "deny" (the
	// default) or "ask", the agent's own prompt.
	Unreachable string `toml:"unreachable"`
	// IdleTimeout ends a session no hook has asked anything of for this long; its next
	// request opens it again, as its next attempt.
	IdleTimeout Duration `toml:"idle_timeout"`
	// MaxSessions bounds how many of the source's sessions a node keeps open at once.
	MaxSessions int `toml:"max_sessions"`
}

// attached checks a source and makes the host its sessions run as.
func (v *validator) attached(a *Attached, m *Manifest) {
	at := func(key string) []string { return []string{"attached", a.Name, key} }
	if !namePattern.MatchString(a.Name) {
		v.add([]string{"attached", a.Name}, "source name %q may only hold letters, digits, '_' and '-' (it is part of NATS subjects)", a.Name)
	}
	if _, dup := m.Hosts[a.Name]; dup {
		v.add([]string{"attached", a.Name}, "%q is a host as well; an attached source is a host of its own, so give it another name", a.Name)
		return
	}
	if a.Dialect == "" {
		v.add([]string{"attached", a.Name}, `an attached source needs its agents' dialect: dialect = "claude-code" or "codex"`)
	} else {
		v.enum(at("dialect"), &a.Dialect, "", "an attached dialect", AttachedClaudeCode, AttachedCodex)
	}
	v.enum(at("approval_default"), &a.ApprovalDefault, "no", "an approval answer", "yes", "no")
	v.enum(at("unreachable"), &a.Unreachable, UnreachableDeny, "what a hook does when agentmux cannot decide", UnreachableDeny, UnreachableAsk)
	v.required(at("question_timeout"), &a.QuestionTimeout, DefaultQuestionTimeout, "would leave requests without a deadline")
	v.required(at("idle_timeout"), &a.IdleTimeout, DefaultAttachedIdle, "would keep every session open forever")
	switch {
	case a.MaxSessions == 0:
		a.MaxSessions = DefaultAttachedMaxSessions
	case a.MaxSessions < 0:
		v.add(at("max_sessions"), "%d is negative; use how many sessions a node keeps open at once, ≥ 1", a.MaxSessions)
	}
	approve, _ := json.Marshal(a.ApprovalDefault)
	m.Hosts[a.Name] = &Host{Name: a.Name,
		Framing:     Framing{Dialect: "ndjson", InputFormat: "json", PlainText: "result", MaxLineBytes: DefaultMaxLineBytes},
		Timing:      Timing{QuestionTimeout: a.QuestionTimeout, InitTimeout: Duration(DefaultInitTimeout), StopGrace: Duration(DefaultStopGrace)},
		Defaults:    Defaults{ApprovalDefault: a.ApprovalDefault, QuestionDefault: ""},
		Sessions:    Sessions{Pool: a.MaxSessions},
		HostDerived: HostDerived{ApprovalDefaultJSON: approve, QuestionDefaultJSON: json.RawMessage(`""`), Attached: a}}
}

// AttachedAgent is the agent of an attached source's dialect, as messages name it.
func AttachedAgent(dialect string) string {
	if dialect == AttachedCodex {
		return "Codex"
	}
	return "Claude Code"
}
