package console

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
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
// with the answers given, which are promoted, and the latest requests they disagreed on.
type shadowView struct {
	Shadows   []shadowRow         `json:"shadows"`
	Disagreed []*wire.AuditRecord `json:"disagreed"`
	Error     string              `json:"error,omitempty"`
}

// shadowRow is a shadow's tally, and why the default bar would not promote it ("" if
// it would).
type shadowRow struct {
	policy.ShadowTally
	NotPromotable string `json:"not_promotable,omitempty"`
}

// maxDisagreements is how many disagreements the page lists, latest first.
const maxDisagreements = 50

// shadowWindow is how far back the page reads shadow decisions, and judges a promotion.
const shadowWindow = "7d"

// defaultBar is the bar the console promotes by.
func defaultBar() policy.Bar {
	return policy.Bar{MinAgreement: policy.DefaultMinAgreement, MinDecided: policy.DefaultMinDecided}
}

func (s *Server) shadows(w http.ResponseWriter, r *http.Request) {
	out := &shadowView{Shadows: []shadowRow{}, Disagreed: []*wire.AuditRecord{}}
	from, err := sinceParam(r, shadowWindow)
	var tallies []policy.ShadowTally
	var disagreed []*wire.AuditRecord
	if err == nil {
		ctx, cancel := context.WithTimeout(r.Context(), policyReadTimeout)
		defer cancel()
		tallies, disagreed, err = policy.ReadShadows(ctx, s.cfg.Conn, from, "")
	}
	if err != nil {
		out.Error = err.Error()
		writeJSON(w, http.StatusBadGateway, out)
		return
	}
	for _, t := range tallies {
		row := shadowRow{ShadowTally: t}
		if err := defaultBar().Check(t); err != nil {
			row.NotPromotable = err.Error()
		}
		out.Shadows = append(out.Shadows, row)
	}
	slices.Reverse(disagreed)
	out.Disagreed = disagreed[:min(len(disagreed), maxDisagreements)]
	writeJSON(w, http.StatusOK, out)
}

// promoteShadow is POST /api/policy/shadow/{name}/promote and …/demote: an operator
// promotes a shadow whose last 7 days clear the default bar, or demotes one, in their
// name.
func (s *Server) promoteShadow(w http.ResponseWriter, r *http.Request) {
	p := s.gate.who(r)
	shadow, demote := r.PathValue("name"), strings.HasSuffix(r.URL.Path, "/demote")
	var q struct {
		Note string `json:"note"`
	}
	err := json.NewDecoder(io.LimitReader(r.Body, maxAnswerBytes)).Decode(&q)
	switch {
	case p.role != config.APIOperator:
		writeJSON(w, http.StatusForbidden, &wire.ShadowPromoteReply{Error: p.name + " may look, not promote a supervisor: that takes one of the console's operator groups"})
		return
	case err != nil && !errors.Is(err, io.EOF):
		writeJSON(w, http.StatusBadRequest, &wire.ShadowPromoteReply{Error: `post {"note": "why"}`})
		return
	case !wire.IsName(shadow):
		writeJSON(w, http.StatusBadRequest, &wire.ShadowPromoteReply{Error: "no such supervisor: " + shadow})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), policyReadTimeout)
	defer cancel()
	var reply *wire.ShadowPromoteReply
	if demote {
		reply, err = store.PromoteShadow(ctx, s.cfg.Conn, shadow, p.name, &wire.ShadowPromote{Demote: true, Note: q.Note})
	} else {
		from, _ := store.ParseTimeBound(shadowWindow, time.Now())
		reply, err = policy.Promote(ctx, s.cfg.Conn, shadow, p.name, q.Note, from, defaultBar())
	}
	if err != nil {
		writeJSON(w, http.StatusConflict, &wire.ShadowPromoteReply{Error: err.Error()})
		return
	}
	s.cfg.Log.Info("shadow promotion from the console", "shadow", shadow, "demote", demote, "as", p.name, "error", reply.Error)
	writeJSON(w, http.StatusOK, reply)
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

// sinceParam is the time the request's ?since= names (a duration, days, or a time;
// def without one).
func sinceParam(r *http.Request, def string) (time.Time, error) {
	since := r.URL.Query().Get("since")
	if since == "" {
		since = def
	}
	return store.ParseTimeBound(since, time.Now())
}

// readPolicyAudit reads the audit records q keeps, since the request's ?since= (def
// without one).
func (s *Server) readPolicyAudit(r *http.Request, q store.AuditQuery, def string) ([]*wire.AuditRecord, error) {
	from, err := sinceParam(r, def)
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
