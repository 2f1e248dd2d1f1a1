package dialect

import (
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/protocol"
)

// Claude Code's and Codex's own words for a usage or rate limit become a canonical
// limit, with how long until they may go on; other retries and errors do not.
func TestVendorsSayTheirLimits(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	claude := func(line string) []*protocol.Message {
		t.Helper()
		msgs, err := (&claude{}).decode([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		return msgs
	}
	retry := claude(`{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":30000,"error_status":429,"error":"rate_limit","session_id":"s"}`)
	if len(retry) != 1 || retry[0].Type != protocol.TypeLimit || retry[0].RetryAfter != 30000 || !strings.Contains(retry[0].Message, "429") {
		t.Errorf("an api_retry of a 429 → %+v; want a limit of 30 s", retry)
	}
	if busy := claude(`{"type":"system","subtype":"api_retry","attempt":1,"retry_delay_ms":2000,"error_status":529,"session_id":"s"}`); len(busy) != 1 || busy[0].Type != protocol.TypeLog {
		t.Errorf("an api_retry of an overloaded server → %+v; want a log line", busy)
	}
	var l claudeLine
	l.Type = "rate_limit_event"
	rejected, err := claudeLimit(&l, []byte(`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1800003600,"rateLimitType":"five_hour"},"session_id":"s"}`), now)
	if err != nil || rejected == nil || rejected.RetryAfter != time.Hour.Milliseconds() || !strings.Contains(rejected.Message, "five_hour usage limit") {
		t.Errorf("a rejected rate_limit_event → %+v (%v); want a limit until its reset, an hour on", rejected, err)
	}
	if allowed, _ := claudeLimit(&l, []byte(`{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1800003600}}`), now); allowed != nil {
		t.Errorf("a warning → %+v; want no limit", allowed)
	}

	c := newCodex("/repo")
	c.codexRateLimits([]byte(`{"rateLimits":{"primary":{"usedPercent":100,"windowDurationMins":300,"resetsAt":1800000600},"secondary":{"usedPercent":40,"resetsAt":1800600000}}}`))
	limit, err := c.codexLimit([]byte(`{"error":{"message":"You've hit your usage limit.","codexErrorInfo":"usageLimitExceeded"},"willRetry":false,"threadId":"t","turnId":"u"}`), nil, now)
	if err != nil || limit == nil || limit.RetryAfter != (10*time.Minute).Milliseconds() || !strings.Contains(limit.Message, "usage limit") {
		t.Errorf("Codex's usageLimitExceeded → %+v (%v); want a limit until its used-up window resets, ten minutes on", limit, err)
	}
	if other, _ := c.codexLimit([]byte(`{"error":{"message":"overloaded","codexErrorInfo":"serverOverloaded"},"willRetry":false}`), nil, now); other != nil {
		t.Errorf("another error → %+v; want no limit", other)
	}
	if decoded, _, err := c.Decode([]byte(`{"method":"error","params":{"error":{"message":"You've hit your usage limit.","codexErrorInfo":"usageLimitExceeded"},"willRetry":false}}`)); err != nil || len(decoded) != 1 || decoded[0].Type != protocol.TypeLimit {
		t.Errorf("the error notification decoded → %+v (%v)", decoded, err)
	}
}
