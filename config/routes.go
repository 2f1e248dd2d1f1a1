package config

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
