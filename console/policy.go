package console

import (
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"time"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/policy"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// policyReadTimeout bounds a read of the audit for the policy views: one record a
// request, so a long history takes a while.
const policyReadTimeout = time.Minute

// shadowView is GET /api/policy/shadow: how the routes' shadow supervisors agreed
// with the answers given, and the latest requests they disagreed on.
type shadowView struct {
	Shadows   []policy.ShadowTally `json:"shadows"`
	Disagreed []*wire.AuditRecord  `json:"disagreed"`
	Error     string               `json:"error,omitempty"`
}

// maxDisagreements is how many disagreements the page lists, latest first.
const maxDisagreements = 50

func (s *Server) shadows(w http.ResponseWriter, r *http.Request) {
	out := &shadowView{Shadows: []policy.ShadowTally{}, Disagreed: []*wire.AuditRecord{}}
	records, err := s.readPolicyAudit(r, store.AuditQuery{Kind: "shadow"}, "7d")
	if err != nil {
		out.Error = err.Error()
		writeJSON(w, http.StatusBadGateway, out)
		return
	}
	tallies, disagreed := policy.Shadows(records)
	slices.Reverse(disagreed)
	out.Shadows, out.Disagreed = tallies, disagreed[:min(len(disagreed), maxDisagreements)]
	writeJSON(w, http.StatusOK, out)
}

// suggestView is GET /api/policy/suggest: the rules the audit's approvals agree on, and
// the rule supervisors whose rules files may take them.
type suggestView struct {
	Suggestions []policy.Suggestion `json:"suggestions"`
	Refused     []policy.Refused    `json:"refused"`
	Supervisors []string            `json:"supervisors"`
	Error       string              `json:"error,omitempty"`
}

func (s *Server) suggest(w http.ResponseWriter, r *http.Request) {
	m := s.cfg.Manifest
	out := &suggestView{Suggestions: []policy.Suggestion{}, Refused: []policy.Refused{}, Supervisors: []string{}}
	for name, sup := range m.Supervisors {
		if sup.Strategy == config.StrategyRule && sup.RulesFile != "" {
			out.Supervisors = append(out.Supervisors, name)
		}
	}
	slices.Sort(out.Supervisors)
	records, err := s.readPolicyAudit(r, store.AuditQuery{Type: "approval"}, "30d")
	if err != nil {
		out.Error = err.Error()
		writeJSON(w, http.StatusBadGateway, out)
		return
	}
	suggestions, refused := policy.Suggest(policy.FromAudit(records), policy.Options{MinSupport: 3, MinAgreement: 0.9, Cwd: m.WorkDir, Root: filepath.Dir(m.Path)})
	out.Suggestions = append(out.Suggestions, suggestions...)
	out.Refused = append(out.Refused, refused...)
	writeJSON(w, http.StatusOK, out)
}

// readPolicyAudit reads the audit records q keeps, since the request's ?since= (a
// duration, days, or a time; def without one).
func (s *Server) readPolicyAudit(r *http.Request, q store.AuditQuery, def string) ([]*wire.AuditRecord, error) {
	since := r.URL.Query().Get("since")
	if since == "" {
		since = def
	}
	from, err := store.ParseTimeBound(since, time.Now())
	if err != nil {
		return nil, err
	}
	q.Since = from
	ctx, cancel := context.WithTimeout(r.Context(), policyReadTimeout)
	defer cancel()
	var records []*wire.AuditRecord
	err = store.SearchAudit(ctx, s.cfg.Conn, q, func(rec *wire.AuditRecord) error {
		records = append(records, rec)
		return nil
	})
	return records, err
}
