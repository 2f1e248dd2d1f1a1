package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/nats-io/nuid"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/permission"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// maxRules bounds the rules one "always" saves.
const maxRules = 16

// rulesView is one supervisor's rules file across the nodes that run it.
type rulesView struct {
	Supervisor string           `json:"supervisor"`
	Path       string           `json:"path"`
	Nodes      []string         `json:"nodes"`
	Rules      *permission.File `json:"rules,omitempty"`
	// Differs names the nodes whose file holds other rules than the first node's.
	Differs []string `json:"differs,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// rulesList is GET /api/rules.
type rulesList struct {
	Files []*rulesView `json:"files"`
	Error string       `json:"error,omitempty"`
}

// fleetRules reads every node's rules files, one view per supervisor.
func (s *Server) fleetRules(ctx context.Context) ([]*rulesView, error) {
	replies, err := store.ListRules(ctx, s.cfg.Conn, s.cfg.JS)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(replies, func(a, b *wire.RulesReply) int { return strings.Compare(a.Node, b.Node) })
	by := map[string]*rulesView{}
	var out []*rulesView
	for _, r := range replies {
		for _, f := range r.Files {
			v := by[f.Supervisor]
			if v == nil {
				v = &rulesView{Supervisor: f.Supervisor, Path: f.Path, Rules: f.Rules, Error: f.Error}
				by[f.Supervisor] = v
				out = append(out, v)
			} else if !reflect.DeepEqual(v.Rules, f.Rules) || v.Error != f.Error {
				v.Differs = append(v.Differs, r.Node)
			}
			v.Nodes = append(v.Nodes, r.Node)
		}
	}
	slices.SortFunc(out, func(a, b *rulesView) int { return strings.Compare(a.Supervisor, b.Supervisor) })
	return out, nil
}

// rules lists the rules files of the fleet's rule supervisors.
func (s *Server) rules(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), busTimeout)
	defer cancel()
	files, err := s.fleetRules(ctx)
	if err != nil {
		writeJSON(w, http.StatusBadGateway, &rulesList{Files: []*rulesView{}, Error: err.Error()})
		return
	}
	if files == nil {
		files = []*rulesView{}
	}
	writeJSON(w, http.StatusOK, &rulesList{Files: files})
}

// proposal is GET /api/rules/propose?id=: the rules that would stand for a request,
// and the supervisors whose rules file may keep them.
type proposal struct {
	Rules       []string `json:"rules,omitempty"`
	Verdict     string   `json:"verdict"`
	Supervisor  string   `json:"supervisor,omitempty"` // the one that escalated it, if it has a rules file
	Supervisors []string `json:"supervisors"`
	Error       string   `json:"error,omitempty"`
}

func (s *Server) proposeRules(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), busTimeout)
	defer cancel()
	id := r.URL.Query().Get("id")
	out := &proposal{Verdict: string(permission.Allow), Supervisors: []string{}}
	if !wire.IsName(id) {
		out.Error = "no such request " + id
		writeJSON(w, http.StatusBadRequest, out)
		return
	}
	p, _, err := s.pending.Get(ctx, id)
	if err != nil {
		out.Error = err.Error()
		writeJSON(w, http.StatusNotFound, out)
		return
	}
	files, err := s.fleetRules(ctx)
	if err != nil {
		out.Error = err.Error()
		writeJSON(w, http.StatusBadGateway, out)
		return
	}
	for _, f := range files {
		out.Supervisors = append(out.Supervisors, f.Supervisor)
	}
	if slices.Contains(out.Supervisors, p.EscalatedBy) {
		out.Supervisor = p.EscalatedBy
	} else if len(out.Supervisors) > 0 {
		out.Supervisor = out.Supervisors[0]
	}
	out.Rules, err = s.propose(p)
	switch {
	case err != nil:
		out.Error = err.Error()
	case len(out.Supervisors) == 0:
		out.Error = "no node runs a rule supervisor with a rules file: give one rules_file in the manifest"
	}
	writeJSON(w, http.StatusOK, out)
}

// propose is the rules that would stand for p's tool call.
func (s *Server) propose(p *wire.PendingRequest) ([]string, error) {
	if p.Type != "approval" {
		return nil, fmt.Errorf("only an approval of a tool can be saved as a rule; this is a %s", p.Type)
	}
	call, ok := permission.FromApproval(p.Body)
	if !ok {
		return nil, fmt.Errorf("the approval names no tool, so no permission rule covers it")
	}
	cwd := ""
	if m := s.cfg.Manifest; m != nil && m.Hosts[p.Host] != nil {
		cwd = m.Hosts[p.Host].WorkingDir
	}
	return permission.Propose(call, cwd)
}

// ruleRequest is POST /api/rules: save rules in a supervisor's rules file, and, with
// an id, answer that request by them.
type ruleRequest struct {
	ID         string   `json:"id,omitempty"`
	Supervisor string   `json:"supervisor"`
	Verdict    string   `json:"verdict"`
	Rules      []string `json:"rules"`
	Note       string   `json:"note,omitempty"`
	Remove     bool     `json:"remove,omitempty"`
}

// ruleReply says what each node did, and the answer given by the rules.
type ruleReply struct {
	OK     bool               `json:"ok"`
	Nodes  []*wire.RulesReply `json:"nodes,omitempty"`
	Answer *wire.RespondReply `json:"answer,omitempty"`
	Error  string             `json:"error,omitempty"`
}

// saveRules writes a person's rules into the fleet's copies of a supervisor's rules
// file (each node reloads), then answers the request they were given on by them: the
// request is answered only once every node running the supervisor has the rules.
func (s *Server) saveRules(w http.ResponseWriter, r *http.Request) {
	var q ruleRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxAnswerBytes)).Decode(&q); err != nil {
		writeJSON(w, http.StatusBadRequest, &ruleReply{Error: `post {"id", "supervisor", "verdict", "rules"}`})
		return
	}
	p := s.gate.who(r)
	if p.role != config.APIOperator {
		writeJSON(w, http.StatusForbidden, &ruleReply{Error: p.name + " may look, not change rules: that takes one of the console's operator_groups"})
		return
	}
	verdict, err := permission.ParseVerdict(q.Verdict)
	if problem := checkRules(&q, verdict, err); problem != "" {
		writeJSON(w, http.StatusBadRequest, &ruleReply{Error: problem})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), busTimeout*3)
	defer cancel()
	c := &wire.RuleChange{ID: nuid.Next(), Verdict: q.Verdict, Rules: q.Rules, Remove: q.Remove, Note: q.Note}
	var pending *wire.PendingRequest
	if q.ID != "" {
		if pending, _, err = s.pending.Get(ctx, q.ID); err != nil {
			writeJSON(w, http.StatusNotFound, &ruleReply{Error: err.Error()})
			return
		}
		if pending.State != wire.StatePending {
			writeJSON(w, http.StatusConflict, &ruleReply{Error: fmt.Sprintf("%s is %s already: its rules were not saved", q.ID, pending.State)})
			return
		}
		c.Host, c.Session, c.Request = pending.Host, pending.Session, pending.ID
	}
	nodes, err := store.ChangeRules(ctx, s.cfg.Conn, s.cfg.JS, q.Supervisor, p.name, c)
	if err != nil {
		writeJSON(w, http.StatusBadGateway, &ruleReply{Error: err.Error()})
		return
	}
	out := &ruleReply{OK: true, Nodes: nodes}
	for _, n := range nodes {
		if n.Error != "" {
			out.OK = false
			out.Error = strings.TrimPrefix(out.Error+"; ", "; ") + n.Node + ": " + n.Error
		}
	}
	s.cfg.Log.Info("rules changed from the console", "supervisor", q.Supervisor, "verdict", q.Verdict, "rules", q.Rules, "remove", q.Remove, "as", p.name, "ok", out.OK)
	if !out.OK || pending == nil {
		writeJSON(w, http.StatusOK, out)
		return
	}
	value, did := `"yes"`, "allowed"
	if verdict == permission.Deny {
		value, did = `"no"`, "denied"
	}
	reason := fmt.Sprintf("%s from now on by %s in supervisor %s's rules file", did, strings.Join(q.Rules, ", "), q.Supervisor)
	out.Answer, err = s.api.Give(r.Context(), p.name, pending.ID, wire.RespondRequest{Value: json.RawMessage(value), Reason: reason, Scope: wire.ScopeRule})
	if err != nil {
		out.Answer = &wire.RespondReply{Code: wire.RespondFailed, Error: err.Error()}
	}
	out.OK = out.Answer.OK
	if !out.OK {
		out.Error = "the rules are saved, but the request was not answered by them: " + out.Answer.Error
	}
	writeJSON(w, http.StatusOK, out)
}

// checkRules says what is wrong with a change of rules, or "": bad is why its verdict
// did not parse.
func checkRules(q *ruleRequest, verdict permission.Verdict, bad error) string {
	switch {
	case !wire.IsName(q.Supervisor):
		return "name the supervisor whose rules file keeps the rules"
	case bad != nil:
		return bad.Error()
	case q.ID != "" && (verdict == permission.Ask || q.Remove):
		return "a request is answered by a rule that allows or denies it"
	case q.ID != "" && !wire.IsName(q.ID):
		return "no such request " + q.ID
	case len(q.Rules) == 0 || len(q.Rules) > maxRules:
		return fmt.Sprintf("give 1 to %d rules", maxRules)
	}
	for i, rule := range q.Rules {
		q.Rules[i] = strings.TrimSpace(rule)
		if _, err := permission.Parse(q.Rules[i], permission.Paths{}); err != nil {
			return err.Error()
		}
	}
	return ""
}
