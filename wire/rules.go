package wire

import (
	"strings"

	"github.com/agentmux/agentmux/permission"
)

// ScopeRule: a person's answer was saved as a permission rule in a rule supervisor's
// rules file (RuleChange), so it stands for every request the rule covers, on every
// node running that supervisor, until someone removes it.
const ScopeRule = "rule"

// Audit kinds of a rules file's changes.
const (
	AuditRuleAdded   = "rule.added"
	AuditRuleRemoved = "rule.removed"
)

// RulesSubject lists the rules files of the fleet: every node answers with those of
// the rule supervisors it runs (RulesReply).
const RulesSubject = "agentmux.rules"

const rulesPrefix = RulesSubject + "."

// RulesChangeSubject is where the person name changes supervisor's rules file: every
// node running the supervisor writes the change into its file, reloads its manifest,
// and answers (RulesReply). Only that user may publish there, so a node records who
// changed the rules from the subject; a person's dots are written as RespondSubject
// writes them.
func RulesChangeSubject(supervisor, name string) string {
	return personSubject(rulesPrefix, supervisor, name)
}

// personSubject is prefix, a name token and a person, the person's dots written as
// RespondSubject writes them.
func personSubject(prefix, token, name string) string {
	return prefix + token + "." + strings.ReplaceAll(name, ".", personDot)
}

// parsePersonSubject splits a personSubject of prefix into its token and person.
func parsePersonSubject(subject, prefix string) (token, name string, ok bool) {
	rest, found := strings.CutPrefix(subject, prefix)
	if !found {
		return "", "", false
	}
	token, name, ok = strings.Cut(rest, ".")
	name = strings.ReplaceAll(name, personDot, ".")
	return token, name, ok && IsName(token) && IsPerson(name)
}

// RulesChangeSubjects matches every change of every supervisor's rules.
const RulesChangeSubjects = rulesPrefix + "*.*"

// ParseRulesChangeSubject splits a change's subject into the supervisor and the person.
func ParseRulesChangeSubject(subject string) (supervisor, name string, ok bool) {
	return parsePersonSubject(subject, rulesPrefix)
}

// RuleChange adds rules to a rules file's list for Verdict (moving them from another
// list), or removes them from it.
type RuleChange struct {
	// ID names the change: each node audits it under this id, and the audit stream
	// keeps one record of it however many nodes wrote it.
	ID      string   `json:"id"`
	Verdict string   `json:"verdict"` // allow, ask or deny
	Rules   []string `json:"rules"`
	Remove  bool     `json:"remove,omitempty"`
	// Host, Session and Request are the request the rules were given on, if any.
	Host    string `json:"host,omitempty"`
	Session string `json:"session,omitempty"`
	Request string `json:"request,omitempty"`
	Note    string `json:"note,omitempty"`
}

// RulesFile is one supervisor's rules file on one node.
type RulesFile struct {
	Supervisor string           `json:"supervisor"`
	Path       string           `json:"path"`
	Rules      *permission.File `json:"rules,omitempty"`
	Error      string           `json:"error,omitempty"` // it does not read
}

// RulesReply is one node's answer on the rules subjects: its rules files (a list), or
// what a change did there.
type RulesReply struct {
	Node    string       `json:"node"`
	Files   []*RulesFile `json:"files,omitempty"`
	Changed bool         `json:"changed,omitempty"` // the file was written and the manifest reloaded
	Error   string       `json:"error,omitempty"`
}
