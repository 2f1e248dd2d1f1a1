package wire

import (
	"fmt"
	"math"
)

// PromotionsBucket keeps the shadow supervisors promoted fleet-wide: one key per
// promoted shadow, its Promotion. Every node decides the requests of each route that
// shadows a promoted supervisor by that supervisor instead (config.Route.Effective).
const PromotionsBucket = "agentmux_promotions"

// Audit kinds of a shadow's promotion and demotion.
const (
	AuditShadowPromoted = "shadow.promoted"
	AuditShadowDemoted  = "shadow.demoted"
)

const shadowPromotePrefix = "agentmux.shadow.promote."

// ShadowPromoteSubject is where the person name promotes (or demotes) shadow
// (ShadowPromote): one node takes it (queue group), writes the promotions bucket,
// audits it and answers (ShadowPromoteReply). Only that user may publish there, so the
// node records who promoted it from the subject.
func ShadowPromoteSubject(shadow, name string) string {
	return personSubject(shadowPromotePrefix, shadow, name)
}

// ShadowPromoteSubjects matches every promotion and demotion of every shadow.
const ShadowPromoteSubjects = shadowPromotePrefix + "*.*"

// ParseShadowPromoteSubject splits a promotion's subject into the shadow and the person.
func ParseShadowPromoteSubject(subject string) (shadow, name string, ok bool) {
	return parsePersonSubject(subject, shadowPromotePrefix)
}

// ShadowPromote promotes a shadow supervisor to the supervisor of the routes it
// shadows, or demotes it (Demote), with what the promoter saw of its record.
type ShadowPromote struct {
	Demote bool   `json:"demote,omitempty"`
	Note   string `json:"note,omitempty"`
	// Agreement with the answers given, over Decided shadow decisions since SinceMS:
	// what the promotion stands on (policy.CheckPromotion).
	Agreement float64 `json:"agreement,omitempty"`
	Decided   int     `json:"decided,omitempty"`
	SinceMS   int64   `json:"since_ms,omitempty"`
}

// maxNote bounds a promotion's note: it is kept in the bucket and the audit.
const maxNote = 1000

// Check says what is wrong with the promotion, if anything.
func (p *ShadowPromote) Check() error {
	switch {
	case len(p.Note) > maxNote:
		return fmt.Errorf("the note is %d bytes: keep it under %d", len(p.Note), maxNote)
	case math.IsNaN(p.Agreement) || p.Agreement < 0 || p.Agreement > 1:
		return fmt.Errorf("agreement %v: give a share from 0 to 1", p.Agreement)
	case p.Decided < 0:
		return fmt.Errorf("decided %d: give how many shadow decisions the agreement is of", p.Decided)
	}
	return nil
}

// Promotion is a shadow supervisor promoted fleet-wide: the value of its key in
// PromotionsBucket.
type Promotion struct {
	Shadow    string  `json:"shadow"`
	By        string  `json:"by"` // human:<person>
	At        int64   `json:"at"` // Unix ms
	Note      string  `json:"note,omitempty"`
	Agreement float64 `json:"agreement"`
	Decided   int     `json:"decided"`
	SinceMS   int64   `json:"since_ms,omitempty"`
}

// ShadowPromoteReply is the promotion made or ended, and the routes of the answering
// node's manifest it changes; or why it was refused.
type ShadowPromoteReply struct {
	Node      string     `json:"node,omitempty"`
	Promotion *Promotion `json:"promotion,omitempty"`
	Routes    []string   `json:"routes,omitempty"` // each "routes[0]: ops → reviewer"
	Error     string     `json:"error,omitempty"`
}
