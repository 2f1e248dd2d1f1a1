package dialect

import (
	"encoding/hex"
	"path/filepath"
	"strings"
	"time"
)

// Conversation is the session's Codex thread, once thread/start or thread/resume said it.
func (c *codex) Conversation() string { return c.threadID }

// Transcript is the rollout file Codex keeps thread id in: under its home (CODEX_HOME,
// or ~/.codex), sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl. Codex finds a thread by
// its id there, so one put back on another node is named by the time in its id (a
// UUIDv7's), or now.
func (c *codex) Transcript(env []string, _, id string) string {
	home, ok := lookup(env, "CODEX_HOME")
	if !ok {
		h, _ := lookup(env, "HOME")
		home = filepath.Join(h, ".codex")
	}
	sessions := filepath.Join(home, "sessions")
	if found, _ := filepath.Glob(filepath.Join(sessions, "*", "*", "*", "rollout-*-"+id+".jsonl")); len(found) > 0 {
		return found[0]
	}
	at := uuidTime(id).UTC()
	return filepath.Join(sessions, at.Format("2006/01/02"), "rollout-"+at.Format("2006-01-02T15-04-05")+"-"+id+".jsonl")
}

// uuidTime is when a UUIDv7 was made (its first 48 bits, unix milliseconds), or now.
func uuidTime(id string) time.Time {
	b, err := hex.DecodeString(strings.ReplaceAll(id, "-", ""))
	if err != nil || len(b) != 16 || b[6]>>4 != 7 {
		return time.Now()
	}
	var ms int64
	for _, x := range b[:6] {
		ms = ms<<8 | int64(x)
	}
	return time.UnixMilli(ms)
}
