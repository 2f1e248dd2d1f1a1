package console

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/nats-io/nats.go"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/wire"
)

// grants lists the answers standing for a session or a host, as the nodes keep them.
func (s *Server) grants(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), busTimeout)
	defer cancel()
	msg, err := s.cfg.Conn.RequestWithContext(ctx, wire.GrantsSubject, nil)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			err = errors.New("no node answered: is `agentmux up` running with this manifest?")
		}
		writeJSON(w, http.StatusBadGateway, &wire.GrantsReply{Error: err.Error()})
		return
	}
	var reply wire.GrantsReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		writeJSON(w, http.StatusBadGateway, &wire.GrantsReply{Error: "a node's list of grants is not JSON"})
		return
	}
	if reply.Grants == nil {
		reply.Grants = []*wire.Grant{}
	}
	writeJSON(w, http.StatusOK, &reply)
}

// revokeGrant revokes a grant as the person signed in: its requests are asked again.
func (s *Server) revokeGrant(w http.ResponseWriter, r *http.Request) {
	p := s.gate.who(r)
	id := r.PathValue("id")
	switch {
	case p.role != config.APIOperator:
		writeJSON(w, http.StatusForbidden, &wire.RespondReply{Code: wire.RespondForbidden, Error: p.name + " may look, not revoke"})
		return
	case !wire.IsGrantID(id) || !wire.IsName(id):
		writeJSON(w, http.StatusBadRequest, &wire.RespondReply{Code: wire.RespondNoSuch, Error: "no such grant " + id})
		return
	}
	reply, err := s.api.Revoke(r.Context(), p.name, id)
	if err != nil {
		writeJSON(w, http.StatusBadGateway, &wire.RespondReply{Code: wire.RespondFailed, Error: err.Error()})
		return
	}
	s.cfg.Log.Info("grant revoked from the console", "grant", id, "as", p.name, "ok", reply.OK)
	writeJSON(w, http.StatusOK, reply)
}
