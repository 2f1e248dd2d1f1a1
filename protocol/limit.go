package protocol

import (
	"encoding/json"
	"errors"
)

// TypeLimit is an agent at its provider's usage or rate limit:
// {"type":"limit","retry_after_ms":N,"message":"…"}, it cannot go on for N ms. A
// vendor's dialect says it for its agent (Claude Code's api_retry on a 429, its
// rate_limit_event rejected; Codex's usageLimitExceeded). The node pauses the session at
// a checkpoint when its host pauses at a limit (on_limit) and N is long enough to be
// worth it.
const TypeLimit Type = "limit"

// limitWait is the retry_after_ms of a limit line: a number of milliseconds, > 0.
func limitWait(raw []byte) (int64, error) {
	var w struct {
		RetryAfterMS *float64 `json:"retry_after_ms"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return 0, err
	}
	if w.RetryAfterMS == nil || *w.RetryAfterMS <= 0 {
		return 0, errors.New(`a limit needs "retry_after_ms": how many milliseconds until the agent may go on, > 0`)
	}
	return int64(*w.RetryAfterMS), nil
}
