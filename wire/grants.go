package wire

import (
	"encoding/json"
	"strings"
	"time"
)

// Scopes a person may give an answer beyond its request (RespondRequest.Scope).
const (
	// ScopeHost: the same request in any session of the host gets this answer, for
	// HostGrantFor, decided by host:<decider>.
	ScopeHost = "host"
)

// HostGrantFor is how long an answer given for a host stands.
const HostGrantFor = time.Hour

// GrantsBucket keeps the answers people gave beyond their request (Grant), by id.
const GrantsBucket = "agentmux_grants"

// GrantsSubject lists the grants standing: any node answers, in a queue group.
const GrantsSubject = "agentmux.grants"

// grantPrefix starts a grant's id; the rest is the id of the request it was given on.
const grantPrefix = "g-"

// Grant is a person's answer that stands for more than the request it was given on:
// for the rest of that session, or for every session of its host until Expires. Any
// node applies it to the same request (type and text); a person revokes it by
// answering its id (agentmux.respond.<person>.<grant id>).
type Grant struct {
	ID      string          `json:"id"`
	Scope   string          `json:"scope"` // ScopeSession or ScopeHost
	Host    string          `json:"host"`
	Session string          `json:"session"` // where it was given: the only one it stands for, scope session
	Type    string          `json:"type"`
	Text    string          `json:"text"` // the request it stands for
	Value   json.RawMessage `json:"value"`
	By      string          `json:"by"`      // its decider: human:<person>
	Request string          `json:"request"` // the agent's request it was given on (its id names the person's)
	Created time.Time       `json:"created"`
	Expires time.Time       `json:"expires,omitzero"` // scope host
}

// GrantID is the id of the grant given on the pending request id.
func GrantID(pending string) string { return grantPrefix + pending }

// IsGrantID reports whether id names a grant (not a pending request).
func IsGrantID(id string) bool { return strings.HasPrefix(id, grantPrefix) }

// GrantFrom is the grant an answered pending request p gives, or nil when its answer
// stands for it alone.
func GrantFrom(p *PendingRequest) *Grant {
	if p.Scope != ScopeSession && p.Scope != ScopeHost {
		return nil
	}
	g := &Grant{ID: GrantID(p.ID), Scope: p.Scope, Host: p.Host, Session: p.Session, Type: p.Type, Text: p.Text,
		Value: p.Value, By: p.Decider(), Request: p.Request, Created: p.AnsweredAt}
	if p.Scope == ScopeHost {
		g.Expires = p.AnsweredAt.Add(HostGrantFor)
	}
	return g
}

// Covers reports whether g answers a request of typ with text, from session of host,
// at now.
func (g *Grant) Covers(host, session, typ, text string, now time.Time) bool {
	if g.Host != host || g.Type != typ || g.Text != text || (!g.Expires.IsZero() && !now.Before(g.Expires)) {
		return false
	}
	return g.Scope == ScopeHost || g.Session == session
}

// GrantsReply answers GrantsSubject: the grants standing, oldest first.
type GrantsReply struct {
	Grants []*Grant `json:"grants"`
	Error  string   `json:"error,omitempty"`
}

// RevokeSubject is where the person name revokes grant id (an answer standing for a
// session or a host); as on RespondSubject, only that user may publish there, so a node
// records who revoked it from the subject.
func RevokeSubject(name, id string) string { return personFirst(revokePrefix, name, id) }

// RevokeSubjects matches every revocation of every user.
const RevokeSubjects = revokePrefix + "*.>"

// ParseRevokeSubject splits a revocation's subject into the user and the grant id.
func ParseRevokeSubject(subject string) (user, id string, ok bool) {
	return parsePersonFirst(revokePrefix, subject)
}
