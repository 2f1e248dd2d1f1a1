package wire

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/nats-io/nuid"
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

// TaskSubject is host's queue as subjects name it: where a task was queued by a
// client that vouched for nobody (TaskSubjectBy), whose queuer is only a claim.
func TaskSubject(host string) string { return taskPrefix + host }

// TaskSubjectBy is where by queues a task for host. The bus lets an operator queue as
// itself only, the console and the local operator as the people they act for: a node
// records by as who asked for the session, and a task's own By, where it differs, as a
// claim. A by that cannot be a token of a subject queues on TaskSubject.
func TaskSubjectBy(host, by string) string {
	if !isToken(by) {
		return TaskSubject(host)
	}
	return taskPrefix + host + "." + by
}

// TaskSubjectsBy matches every subject by may queue a task on, for any host.
func TaskSubjectsBy(by string) string { return taskPrefix + "*." + by }

// TaskQueue is the subjects of host's queue, vouched for or not.
func TaskQueue(host string) []string { return []string{TaskSubject(host), taskPrefix + host + ".*"} }

// ParseTaskSubject splits a task's subject into its queue (a host or a pipeline) and
// who queued it, "" when nobody vouched for it.
func ParseTaskSubject(subject string) (queue, by string, ok bool) {
	rest, ok := strings.CutPrefix(subject, taskPrefix)
	if !ok || rest == "" {
		return "", "", false
	}
	queue, by, _ = strings.Cut(rest, ".")
	return queue, by, true
}

// isToken reports whether s can be one token of a subject.
func isToken(s string) bool {
	return s != "" && !strings.ContainsAny(s, ".*> \t\r\n")
}

// TaskSubjects matches every task subject.
const TaskSubjects = taskPrefix + ">"

// EventSubject is where one event of a session is published.
func EventSubject(host, session, typ string) string {
	return evtPrefix + host + "." + session + "." + typ
}

// ParseEventSubject splits an event subject into host, session and type.
func ParseEventSubject(subject string) (host, session, typ string, ok bool) {
	rest, found := strings.CutPrefix(subject, evtPrefix)
	if !found {
		return "", "", "", false
	}
	parts := strings.SplitN(rest, ".", 3)
	if len(parts) != 3 {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// EventsOfType matches the events of type typ of every session.
func EventsOfType(typ string) string { return evtPrefix + "*.*." + typ }

// SessionEvents matches every event of one session.
func SessionEvents(host, session string) string { return evtPrefix + host + "." + session + ".>" }

// AllEvents matches every event of every session.
const AllEvents = evtPrefix + ">"

// AskSubject is where requests for supervisor are sent; members share queue group supervisor.
func AskSubject(supervisor string) string { return askPrefix + supervisor }

// ParseAskSubject returns the supervisor an ask's subject (AskSubject or
// AskMemberSubject) names.
func ParseAskSubject(subject string) (supervisor string, ok bool) {
	rest, ok := strings.CutPrefix(subject, askPrefix)
	supervisor, _, _ = strings.Cut(rest, ".")
	return supervisor, ok && supervisor != ""
}

// AskMemberSubject is where one member (node) of supervisor takes asks addressed to it
// alone: an ask is sent there when the member the queue group picked fell silent.
func AskMemberSubject(supervisor, member string) string { return askPrefix + supervisor + "." + member }

// AuditSubject is where a session's audit records go.
func AuditSubject(host, session string) string { return auditPrefix + host + "." + session }

// ParseAuditSubject splits an audit subject into its host and session.
func ParseAuditSubject(subject string) (host, session string, ok bool) {
	rest, ok := strings.CutPrefix(subject, auditPrefix)
	if !ok {
		return "", "", false
	}
	host, session, ok = strings.Cut(rest, ".")
	return host, session, ok && host != "" && session != "" && !strings.Contains(session, ".")
}

// AuditSubjects matches every audit subject.
const AuditSubjects = auditPrefix + ">"

// CtlSubject is where node answers verb.
func CtlSubject(node, verb string) string { return ctlPrefix + node + "." + verb }

// ToolSubject is where a tool served by another process answers calls.
func ToolSubject(tool string) string { return toolPrefix + tool }

// HumanSubject announces a request waiting for a person.
func HumanSubject(supervisor, id string) string { return humanPrefix + supervisor + "." + id }

// HumanSubjects matches every announcement.
const HumanSubjects = humanPrefix + ">"

// InboxPrefix is where the replies to requests of the user name arrive. Its own inbox
// keeps one user's replies from every other user.
func InboxPrefix(name string) string { return "_INBOX_" + name }

// RespondSubject is where the person name answers the request waiting for a person id;
// only that user may publish there, so a node records who answered from the subject.
// A person's dots (an email's) are written %2E, as a subject's token holds none.
func RespondSubject(name, id string) string {
	return respondPrefix + strings.ReplaceAll(name, ".", personDot) + "." + id
}

// RespondSubjects matches every answer of every user.
const RespondSubjects = respondPrefix + "*.>"

// ParseRespondSubject splits an answer's subject into the user and the request id.
func ParseRespondSubject(subject string) (user, id string, ok bool) {
	rest, found := strings.CutPrefix(subject, respondPrefix)
	if !found {
		return "", "", false
	}
	user, id, ok = strings.Cut(rest, ".")
	user = strings.ReplaceAll(user, personDot, ".")
	return user, id, ok && user != "" && id != ""
}

// RevokeSubject is where the person name revokes grant id (an answer standing for a
// session or a host); as on RespondSubject, only that user may publish there, so a node
// records who revoked it from the subject.
func RevokeSubject(name, id string) string {
	return revokePrefix + strings.ReplaceAll(name, ".", personDot) + "." + id
}

// RevokeSubjects matches every revocation of every user.
const RevokeSubjects = revokePrefix + "*.>"

// ParseRevokeSubject splits a revocation's subject into the user and the grant id.
func ParseRevokeSubject(subject string) (user, id string, ok bool) {
	rest, found := strings.CutPrefix(subject, revokePrefix)
	if !found {
		return "", "", false
	}
	user, id, ok = strings.Cut(rest, ".")
	user = strings.ReplaceAll(user, personDot, ".")
	return user, id, ok && user != "" && id != ""
}

// PendingSubjects are the writes of the pending bucket, which tell the console what to
// read again (store.PendingStore.Watch).
const PendingSubjects = PendingKeys + ">"

// PendingKeys is the pending bucket's subject prefix: PendingKeys + a request's id.
const PendingKeys = "$KV." + PendingBucket + "."

var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// IsName reports whether s may name a host, supervisor, node or user: it is one token
// of the subjects.
func IsName(s string) bool { return namePattern.MatchString(s) }

// maxTaskID bounds a task's id, which names its session in every subject of it.
const maxTaskID = 128

// CheckTaskID says what is wrong with id as a task's id, or nil. The id becomes the
// session's, one token of every subject of the session: a dot would split it, and a
// wildcard would match other sessions.
func CheckTaskID(id string) error {
	switch {
	case id == "":
		return errors.New("a task id is empty")
	case len(id) > maxTaskID:
		return fmt.Errorf("task id %.20q… is %d characters long; at most %d", id, len(id), maxTaskID)
	case !IsName(id):
		return fmt.Errorf("task id %q is one token of NATS subjects: use letters, digits, '_' and '-' (no '.', '*', '>' or spaces)", id)
	}
	return nil
}

// NewSessionID names a new session: unique across the fleet, and a single subject token.
func NewSessionID() string { return "s-" + nuid.Next() }

// attachPrefix starts the subjects of sessions agentmux did not start (package attach).
const attachPrefix = "agentmux.attach."

// AttachSubject is where the requests of an attached source's sessions are sent; the
// nodes that run the source share queue group AttachQueue.
func AttachSubject(source string) string { return attachPrefix + source }

// AttachNodeSubject is where one node takes the requests of the source's sessions it
// holds: a node that took a request for a session another node holds sends it on there.
func AttachNodeSubject(source, node string) string { return attachPrefix + source + "." + node }

// AttachSubjects matches every attach subject.
const AttachSubjects = attachPrefix + ">"

// AttachQueue is the queue group of the nodes that take attached requests.
const AttachQueue = "agentmux-attach"
