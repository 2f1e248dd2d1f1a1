package policy

import (
	"maps"
	"slices"
	"strings"

	"github.com/agentmux/agentmux/wire"
)

// ShadowTally is how often one shadow supervisor agreed with the answers given.
type ShadowTally struct {
	Supervisor string  `json:"supervisor"`
	Decided    int     `json:"decided"`
	Agreed     int     `json:"agreed"`
	Disagreed  int     `json:"disagreed"`
	NoAnswer   int     `json:"no_answer"`
	Agreement  float64 `json:"agreement"` // Agreed / (Agreed + Disagreed)
	// AllowsDenied counts the approvals it would have allowed that were denied; of
	// them, PersonDenied a person denied.
	AllowsDenied int `json:"allows_denied"`
	PersonDenied int `json:"person_denied"`
	// Promoted, when it is promoted fleet-wide (its callers read the bucket).
	Promoted *wire.Promotion `json:"promoted,omitempty"`
}

// Shadows tallies the shadow records among records, by shadow supervisor (sorted),
// and lists those that disagreed, oldest first.
func Shadows(records []*wire.AuditRecord) ([]ShadowTally, []*wire.AuditRecord) {
	tallies := map[string]*ShadowTally{}
	var disagreed []*wire.AuditRecord
	for _, r := range records {
		if r.Kind != "shadow" {
			continue
		}
		name := ShadowOf(r)
		t := tallies[name]
		if t == nil {
			t = &ShadowTally{Supervisor: name}
			tallies[name] = t
		}
		t.Decided++
		switch r.Outcome {
		case "agreed":
			t.Agreed++
		case "disagreed":
			t.Disagreed++
			disagreed = append(disagreed, r)
			if r.Type == "approval" && word(r.Value) == "yes" && word(r.Given) == "no" {
				t.AllowsDenied++
				if (&Decided{Decider: r.GivenBy}).Person() {
					t.PersonDenied++
				}
			}
		default:
			t.NoAnswer++
		}
	}
	out := make([]ShadowTally, 0, len(tallies))
	for _, name := range slices.Sorted(maps.Keys(tallies)) {
		t := tallies[name]
		t.Agreement = float64(t.Agreed) / float64(max(t.Agreed+t.Disagreed, 1))
		out = append(out, *t)
	}
	return out, disagreed
}

// ShadowOf is the shadow supervisor a shadow record is of: its decider names it
// (llm:reviewer/model, rule:ops, external:x) or, with no answer, is its name.
func ShadowOf(r *wire.AuditRecord) string {
	name := r.Decider
	if _, after, ok := strings.Cut(name, ":"); ok {
		name = after
	}
	name, _, _ = strings.Cut(name, "/")
	return name
}

// Promoted marks the tallies of the shadows promotions promoted, adding an empty
// tally for each promoted shadow that has none, sorted by shadow.
func Promoted(tallies []ShadowTally, promotions map[string]*wire.Promotion) []ShadowTally {
	out := slices.Clone(tallies)
	for i := range out {
		out[i].Promoted = promotions[out[i].Supervisor]
	}
	for name, p := range promotions {
		if !slices.ContainsFunc(out, func(t ShadowTally) bool { return t.Supervisor == name }) {
			out = append(out, ShadowTally{Supervisor: name, Promoted: p})
		}
	}
	slices.SortFunc(out, func(a, b ShadowTally) int { return strings.Compare(a.Supervisor, b.Supervisor) })
	return out
}
