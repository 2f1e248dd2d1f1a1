package policy

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/agentmux/agentmux/permission"
)

// Options bound what Suggest proposes.
type Options struct {
	// MinSupport is how many past requests a rule must allow to be proposed.
	MinSupport int
	// MinAgreement is the share of them that must have been approved (0 to 1).
	MinAgreement float64
	// Cwd is a host's working folder, for file rules relative to it ("Edit(./src/**)");
	// nil or "": rules by absolute path.
	Cwd func(host string) string
	// Root is where a rule's "/x" path starts (the manifest's folder).
	Root string
}

// Suggestion is a rule Suggest proposes, and the history behind it.
type Suggestion struct {
	Rule      string   `json:"rule"`
	Support   int      `json:"support"`   // the past requests it allows
	Approved  int      `json:"approved"`  // of those, how many were approved
	Agreement float64  `json:"agreement"` // Approved / Support
	Deciders  []Count  `json:"deciders"`  // who decided them, most first
	Hosts     []string `json:"hosts"`
	Example   string   `json:"example"` // the latest approved request it allows
}

// Count is how many of a suggestion's requests one decider decided.
type Count struct {
	Decider string `json:"decider"`
	N       int    `json:"n"`
}

// Refused is a rule the approvals would have made that Suggest does not propose,
// and why: a person denied a request it allows, or it falls short of the options.
type Refused struct {
	Rule string `json:"rule"`
	Why  string `json:"why"`
}

// Suggest proposes, from history, a permission rule for each kind of tool call that
// was approved: the narrowest that covers its approved calls (permission.Propose and
// permission.Narrowest: a shell command and its subcommands, with the longest run of
// words every one began with; a file tool's folder; a fetch's domain; a tool by name).
// A rule that allows any request a person denied is never proposed, nor one that
// allows fewer than MinSupport past requests or whose requests were approved less often
// than MinAgreement. Suggestions come most supported first.
func Suggest(history []Decided, o Options) ([]Suggestion, []Refused) {
	groups := map[string][]*Decided{} // the rule Propose gives → the approved calls it is proposed for
	for i := range history {
		d := &history[i]
		if !d.Approved() {
			continue
		}
		rules, err := permission.Propose(d.Call, o.cwd(d.Host))
		if err != nil || len(rules) != 1 {
			continue // a line of several commands or files needs several rules: each is proposed from the calls it alone covers
		}
		groups[rules[0]] = append(groups[rules[0]], d)
	}
	var out []Suggestion
	var refused []Refused
	for _, proposed := range slices.Sorted(maps.Keys(groups)) {
		approved := groups[proposed]
		calls := make([]permission.Call, len(approved))
		for i, d := range approved {
			calls[i] = d.Call
		}
		rule, ok := permission.Narrowest(proposed, calls)
		if !ok {
			continue
		}
		s, why := o.judge(rule, history)
		if why != "" {
			refused = append(refused, Refused{Rule: rule, Why: why})
			continue
		}
		out = append(out, *s)
	}
	slices.SortStableFunc(out, func(a, b Suggestion) int {
		return cmp.Or(cmp.Compare(b.Support, a.Support), cmp.Compare(a.Rule, b.Rule))
	})
	return out, refused
}

// judge measures rule against all of history: the requests it allows, how they were
// decided; why is set when it is not to be proposed.
func (o Options) judge(rule string, history []Decided) (s *Suggestion, why string) {
	set := &permission.Set{}
	if err := set.Add(permission.Allow, []string{rule}, permission.Paths{Root: o.Root}); err != nil {
		return nil, err.Error()
	}
	s = &Suggestion{Rule: rule}
	deciders, hosts := map[string]int{}, map[string]bool{}
	for i := range history {
		d := &history[i]
		if v, _ := set.Decide(d.Call, o.cwd(d.Host)); v != permission.Allow {
			continue
		}
		if !d.Approved() && d.Person() {
			return nil, fmt.Sprintf("it would allow %q, which %s denied (%s, session %s)", d.Text, d.Decider, d.At.UTC().Format("2006-01-02 15:04"), d.Session)
		}
		s.Support++
		deciders[d.Decider]++
		hosts[d.Host] = true
		if d.Approved() {
			s.Approved++
			s.Example = d.Text
		}
	}
	s.Agreement = float64(s.Approved) / float64(max(s.Support, 1))
	for _, name := range slices.Sorted(maps.Keys(deciders)) {
		s.Deciders = append(s.Deciders, Count{Decider: name, N: deciders[name]})
	}
	slices.SortStableFunc(s.Deciders, func(a, b Count) int { return cmp.Compare(b.N, a.N) })
	s.Hosts = slices.Sorted(maps.Keys(hosts))
	switch {
	case s.Support < o.MinSupport:
		return nil, fmt.Sprintf("it allows %d past requests, fewer than %d", s.Support, o.MinSupport)
	case s.Agreement < o.MinAgreement:
		return nil, fmt.Sprintf("%d of the %d requests it allows were approved (%.0f%%), under %.0f%%", s.Approved, s.Support, 100*s.Agreement, 100*o.MinAgreement)
	}
	return s, ""
}

func (o Options) cwd(host string) string {
	if o.Cwd == nil {
		return ""
	}
	return o.Cwd(host)
}
