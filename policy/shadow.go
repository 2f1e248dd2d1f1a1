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
