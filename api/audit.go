package api

import (
	"context"
	"net/http"
	"time"

	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

const (
	// searchLimit is the most records one search shows: a narrower one shows the rest.
	searchLimit = 500
	// searchTimeout bounds a search of the audit (it reads one record a request).
	searchTimeout = time.Minute
)

// searchResult is what a search of the audit answers.
type searchResult struct {
	Records []*wire.AuditRecord `json:"records"`
	// More says the search stopped at searchLimit records: narrow it to see the rest.
	More bool `json:"more"`
}

// SearchAudit searches the audit across sessions as `agentmux audit` does: the query's
// host, kind, type, decider, user, since (default 24h) and until.
func (s *Server) SearchAudit(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q := store.AuditQuery{Host: v.Get("host"), Kind: v.Get("kind"), Type: v.Get("type"), Decider: v.Get("decider"), User: v.Get("user")}
	since := v.Get("since")
	if since == "" {
		since = "24h"
	}
	now := time.Now()
	var err error
	if q.Since, err = store.ParseTimeBound(since, now); err == nil {
		q.Until, err = store.ParseTimeBound(v.Get("until"), now)
	}
	if err != nil {
		apiErrorf(w, http.StatusBadRequest, "invalid", "since or until %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), searchTimeout)
	defer cancel()
	res := searchResult{Records: []*wire.AuditRecord{}}
	err = store.SearchAudit(ctx, s.cfg.Conn, q, func(rec *wire.AuditRecord) error {
		if len(res.Records) == searchLimit {
			res.More = true
			return store.ErrEnough
		}
		res.Records = append(res.Records, rec)
		return nil
	})
	if err != nil {
		apiErrorf(w, http.StatusBadGateway, "unavailable", "%v", err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// Trail is a session's audit records.
func (s *Server) Trail(w http.ResponseWriter, r *http.Request) {
	ofSession(w, r, func(ctx context.Context, id string) ([]*wire.AuditRecord, error) {
		return store.ReadAudit(ctx, s.cfg.JS, id)
	})
}

// Checkpoints lists a session's checkpoints (GET /v1/sessions/{id}/checkpoints, and the
// console's): what its node kept to bring it back elsewhere, never their parts.
func (s *Server) Checkpoints(w http.ResponseWriter, r *http.Request) {
	ofSession(w, r, func(ctx context.Context, id string) ([]*wire.Checkpoint, error) {
		return store.ListCheckpoints(ctx, s.cfg.Conn, id)
	})
}

// ofSession answers a GET of the session named in the path with what read finds of
// it: a JSON array, empty when there is nothing.
func ofSession[T any](w http.ResponseWriter, r *http.Request, read func(ctx context.Context, id string) ([]T, error)) {
	id := r.PathValue("id")
	if !wire.IsName(id) {
		apiErrorf(w, http.StatusBadRequest, "invalid", "%q is not a session id", id)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), auditTimeout)
	defer cancel()
	list, err := read(ctx, id)
	if err != nil {
		apiErrorf(w, http.StatusBadGateway, "unavailable", "%v", err)
		return
	}
	if list == nil {
		list = []T{}
	}
	writeJSON(w, http.StatusOK, list)
}
