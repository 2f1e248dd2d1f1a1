package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/wire"
)

// Bounds of a bulk answer.
const (
	maxBulk     = 200 // requests one bulk answer takes
	bulkWorkers = 8   // answered at once
)

// bulkRequest is what the page posts to answer many requests alike.
type bulkRequest struct {
	IDs    []string        `json:"ids"`
	Value  json.RawMessage `json:"value"`
	Reason string          `json:"reason"`
}

// bulkResult is what came of one of them.
type bulkResult struct {
	ID string `json:"id"`
	*wire.RespondReply
}

// respondBulk answers each of many requests with the same answer, each on its own
// (one answer and one audit record per request, as if answered one by one); the first
// answer of each still wins, and each result says what came of it.
func (s *Server) respondBulk(w http.ResponseWriter, r *http.Request) {
	var b bulkRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxAnswerBytes)).Decode(&b); err != nil || len(b.IDs) == 0 || len(b.Value) == 0 {
		writeJSON(w, http.StatusBadRequest, &wire.RespondReply{Code: wire.RespondInvalid, Error: `post {"ids": [...], "value", "reason"}`})
		return
	}
	if len(b.IDs) > maxBulk {
		writeJSON(w, http.StatusBadRequest, &wire.RespondReply{Code: wire.RespondInvalid, Error: fmt.Sprintf("%d requests at once; answer at most %d", len(b.IDs), maxBulk)})
		return
	}
	p := s.gate.who(r)
	if p.role != config.APIOperator {
		writeJSON(w, http.StatusForbidden, &wire.RespondReply{Code: wire.RespondForbidden, Error: p.name + " may look, not answer"})
		return
	}
	results := make([]bulkResult, len(b.IDs))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(bulkWorkers, len(b.IDs)) {
		wg.Go(func() {
			for i := range work {
				results[i] = bulkResult{ID: b.IDs[i], RespondReply: s.answerOne(r.Context(), p.name, b.IDs[i], b.Value, b.Reason)}
			}
		})
	}
	for i := range b.IDs {
		work <- i
	}
	close(work)
	wg.Wait()
	answered := 0
	for _, res := range results {
		if res.OK {
			answered++
		}
	}
	s.cfg.Log.Info("answered in bulk from the console", "as", p.name, "requests", len(b.IDs), "answered", answered, "value", string(b.Value))
	writeJSON(w, http.StatusOK, map[string]any{"results": results})
}

// answerOne gives who's answer to request id, saying what came of it.
func (s *Server) answerOne(ctx context.Context, who, id string, value json.RawMessage, reason string) *wire.RespondReply {
	if !wire.IsName(id) {
		return &wire.RespondReply{Code: wire.RespondNoSuch, Error: "no such request " + id}
	}
	reply, err := s.api.Give(ctx, who, id, wire.RespondRequest{Value: value, Reason: reason})
	if err != nil {
		return &wire.RespondReply{Code: wire.RespondFailed, Error: err.Error()}
	}
	return reply
}
