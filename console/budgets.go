package console

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// budgetsView is GET /api/budgets: each host's day against the fleet's daily budget.
type budgetsView struct {
	LimitUSD float64             `json:"limit_usd,omitempty"` // [budgets.daily] usd; 0: none
	Days     []*wire.DailyBudget `json:"days"`
	Error    string              `json:"error,omitempty"`
}

// budgets lists each host's spend, budget and raises today (UTC), fleet-wide.
func (s *Server) budgets(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), busTimeout)
	defer cancel()
	m := s.cfg.Manifest
	out := &budgetsView{LimitUSD: m.Budgets.DailyUSD(), Days: []*wire.DailyBudget{}}
	now := time.Now()
	days, err := store.ReadSpend(ctx, s.cfg.Conn, now)
	if err != nil {
		out.Error = err.Error()
		writeJSON(w, http.StatusBadGateway, out)
		return
	}
	out.Days = wire.DailyBudgets(m.HostNames(), out.LimitUSD, days, now)
	writeJSON(w, http.StatusOK, out)
}

// raiseBudget raises a host's daily budget for today, fleet-wide, as the person signed
// in: its held tasks run at once.
func (s *Server) raiseBudget(w http.ResponseWriter, r *http.Request) {
	p := s.gate.who(r)
	host := r.PathValue("host")
	var q wire.BudgetRaise
	err := json.NewDecoder(io.LimitReader(r.Body, maxAnswerBytes)).Decode(&q)
	switch {
	case p.role != config.APIOperator:
		writeJSON(w, http.StatusForbidden, &wire.BudgetRaiseReply{Error: p.name + " may look, not raise a budget: that takes one of the console's operator groups"})
		return
	case err != nil:
		writeJSON(w, http.StatusBadRequest, &wire.BudgetRaiseReply{Error: `post {"usd": n, "note": "why"}`})
		return
	case s.cfg.Manifest.Hosts[host] == nil:
		writeJSON(w, http.StatusBadRequest, &wire.BudgetRaiseReply{Error: "host " + host + " is not in the manifest"})
		return
	}
	if err := q.Check(); err != nil {
		writeJSON(w, http.StatusBadRequest, &wire.BudgetRaiseReply{Error: err.Error()})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), busTimeout)
	defer cancel()
	reply, err := store.RaiseDaily(ctx, s.cfg.Conn, host, p.name, &q)
	if err != nil {
		writeJSON(w, http.StatusBadGateway, &wire.BudgetRaiseReply{Error: err.Error()})
		return
	}
	s.cfg.Log.Info("daily budget raised from the console", "host", host, "usd", q.USD, "as", p.name, "error", reply.Error)
	writeJSON(w, http.StatusOK, reply)
}
