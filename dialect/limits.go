package dialect

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentmux/agentmux/protocol"
)

// A vendor's agent that reaches its model without the node's gateway says in its own
// words that it is at a usage or rate limit; its dialect says it as a canonical limit
// ({"type":"limit","retry_after_ms"}), and the node pauses the session where waiting is
// worth it (protocol.TypeLimit).

// limitLine is the canonical limit of an agent that may go on in wait, with the vendor's
// line under "raw".
func limitLine(wait time.Duration, message string, raw []byte) (*protocol.Message, error) {
	return canonical(map[string]any{"type": "limit", "retry_after_ms": max(wait.Milliseconds(), 1), "message": message}, raw)
}

// untilReset is how long until a reset given in unix seconds (or milliseconds, for a
// number that large), from now.
func untilReset(at int64, now time.Time) time.Duration {
	if at > 1e12 {
		return time.UnixMilli(at).Sub(now)
	}
	return time.Unix(at, 0).Sub(now)
}

// claudeLimit is the limit a Claude Code system or rate_limit_event line says, or nil:
// an api_retry of a 429, which it waits out (retry-after) before asking again, or its
// subscription's limit rejected until resetsAt.
func claudeLimit(l *claudeLine, raw []byte, now time.Time) (*protocol.Message, error) {
	var w struct {
		RetryDelayMS int64 `json:"retry_delay_ms"`
		ErrorStatus  int   `json:"error_status"`
		Attempt      int   `json:"attempt"`
		Info         *struct {
			Status   string `json:"status"`
			ResetsAt int64  `json:"resetsAt"`
			Type     string `json:"rateLimitType"`
		} `json:"rate_limit_info"`
	}
	if json.Unmarshal(raw, &w) != nil {
		return nil, nil
	}
	switch {
	case l.Type == "system" && l.Subtype == "api_retry" && w.ErrorStatus == 429 && w.RetryDelayMS > 0:
		return limitLine(time.Duration(w.RetryDelayMS)*time.Millisecond, fmt.Sprintf("claude-code: its model answered 429; retry %d after %v", w.Attempt, time.Duration(w.RetryDelayMS)*time.Millisecond), raw)
	case l.Type == "rate_limit_event" && w.Info != nil && w.Info.Status == "rejected" && w.Info.ResetsAt > 0:
		return limitLine(untilReset(w.Info.ResetsAt, now), "claude-code: its "+w.Info.Type+" usage limit is reached", raw)
	}
	return nil, nil
}

// codexRateLimits notes the reset of Codex's account limits (account/rateLimits/updated):
// the latest of the windows used up, else the primary window's.
func (c *codex) codexRateLimits(params json.RawMessage) {
	type window struct {
		UsedPercent int   `json:"usedPercent"`
		ResetsAt    int64 `json:"resetsAt"`
	}
	var p struct {
		RateLimits struct {
			Primary   *window `json:"primary"`
			Secondary *window `json:"secondary"`
		} `json:"rateLimits"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	var resets int64
	for _, w := range []*window{p.RateLimits.Primary, p.RateLimits.Secondary} {
		if w != nil && w.UsedPercent >= 100 {
			resets = max(resets, w.ResetsAt)
		}
	}
	if resets == 0 && p.RateLimits.Primary != nil {
		resets = p.RateLimits.Primary.ResetsAt
	}
	if resets > 0 {
		c.limitResets = resets
	}
}

// codexLimit is the limit of a Codex error notification of its usage limit
// (codexErrorInfo usageLimitExceeded), which it does not retry, until the reset its
// account's limits last said; nil for any other error, or with no reset known.
func (c *codex) codexLimit(params json.RawMessage, raw []byte, now time.Time) (*protocol.Message, error) {
	var p struct {
		Error struct {
			Message string          `json:"message"`
			Info    json.RawMessage `json:"codexErrorInfo"`
		} `json:"error"`
		WillRetry bool `json:"willRetry"`
	}
	if json.Unmarshal(params, &p) != nil || p.WillRetry || string(p.Error.Info) != `"usageLimitExceeded"` || c.limitResets == 0 {
		return nil, nil
	}
	return limitLine(untilReset(c.limitResets, now), "codex: "+p.Error.Message, raw)
}
