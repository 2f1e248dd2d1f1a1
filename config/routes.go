package config

import (
	"fmt"
	"maps"
	"slices"
)

// Routes are a manifest's [[routes]], in order.
type Routes []*Route

// Match returns the first route whose type, host and pattern all fit a request of type
// typ from host, whose text (question, description or tool name) is text, and that does
// not ask for a conflict (Route.Conflict) unless conflict says the request touches files
// another session touched; nil when none does.
func (rs Routes) Match(host, typ, text string, conflict bool) *Route {
	for _, r := range rs {
		if r.Type != "" && r.Type != typ {
			continue
		}
		if r.Conflict && !conflict {
			continue
		}
		if r.Host != "" && r.Host != host {
			continue
		}
		if r.Re != nil && !r.Re.MatchString(text) {
			continue
		}
		return r
	}
	return nil
}

// Effective is the route as it decides while the shadows in promoted are promoted
// fleet-wide (wire.PromotionsBucket): with its shadow promoted, the shadow is its
// supervisor, and its supervisor, if it may shadow, its shadow. r itself otherwise;
// nil for nil.
func (r *Route) Effective(promoted map[string]bool) *Route {
	if r == nil || r.promoted == nil || !promoted[r.Shadow] {
		return r
	}
	return r.promoted
}

// Shadowing lists the routes of m whose shadow is shadow, each as where it is written
// and its supervisor before and after the shadow's promotion:
// "routes[0]: ops → reviewer".
func (m *Manifest) Shadowing(shadow string) []string {
	var out []string
	add := func(at string, rs []*Route) {
		for i, r := range rs {
			if r.Shadow == shadow && r.promoted != nil {
				out = append(out, fmt.Sprintf("%s[%d]: %s → %s", at, i, r.Supervisor, shadow))
			}
		}
	}
	add("routes", m.Routes)
	for _, name := range slices.Sorted(maps.Keys(m.Pipelines)) {
		for _, s := range m.Pipelines[name].Stages {
			add(fmt.Sprintf("pipelines.%s.stages.%s.routes", name, s.Name), s.Routes)
		}
	}
	return out
}
