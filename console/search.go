package console

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

// searchAudit searches the audit across sessions as `agentmux audit` does: the query's
// host, kind, type, decider, user, since (default 24h) and until.
func (s *Server) searchAudit(w http.ResponseWriter, r *http.Request) {
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
		errorf(w, http.StatusBadRequest, "since or until %v", err)
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
		errorf(w, http.StatusBadGateway, "%v", err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
