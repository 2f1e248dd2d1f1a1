package wire

import (
	"regexp"
	"strings"
)

// Subject prefixes and stream names of the public subject API.
const (
	TaskStream  = "AGENTMUX_TASKS"
	AuditStream = "AGENTMUX_AUDIT"
	// EventStream keeps every session's events (the history `agentmux logs` reads).
	EventStream = "AGENTMUX_EVENTS"

	taskPrefix    = "agentmux.task."
	evtPrefix     = "agentmux.evt."
	askPrefix     = "agentmux.ask."
	auditPrefix   = "agentmux.audit."
	ctlPrefix     = "agentmux.ctl."
	toolPrefix    = "agentmux.tool."
	humanPrefix   = "agentmux.human."
	respondPrefix = "agentmux.respond."
	revokePrefix  = "agentmux.revoke."
)

// isToken reports whether s can be one token of a subject.
func isToken(s string) bool {
	return s != "" && !strings.ContainsAny(s, ".*> \t\r\n")
}

// CtlSubject is where node answers verb.
func CtlSubject(node, verb string) string { return ctlPrefix + node + "." + verb }

// ToolSubject is where a tool served by another process answers calls.
func ToolSubject(tool string) string { return toolPrefix + tool }

// InboxPrefix is where the replies to requests of the user name arrive. Its own inbox
// keeps one user's replies from every other user.
func InboxPrefix(name string) string { return "_INBOX_" + name }

var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// IsName reports whether s may name a host, supervisor, node or user: it is one token
// of the subjects.
func IsName(s string) bool { return namePattern.MatchString(s) }
