package main

import (
	"strings"
	"testing"

	"github.com/agentmux/agentmux/wire"
)

// TestResolveSession: a whole id wins even when it starts another; a start names the one
// session it starts, or is refused naming those it could be.
func TestResolveSession(t *testing.T) {
	t.Parallel()
	live := []liveSession{
		{SessionInfo: wire.SessionInfo{Session: "s-abc"}, Node: "n1"},
		{SessionInfo: wire.SessionInfo{Session: "s-abcd"}, Node: "n2"},
		{SessionInfo: wire.SessionInfo{Session: "s-xyz"}, Node: "n1"},
	}
	for _, tc := range []struct{ id, want, err string }{
		{"s-abc", "s-abc", ""},
		{"s-x", "s-xyz", ""},
		{"s-abcd", "s-abcd", ""},
		{"s-", "", `"s-" starts 3 sessions' ids (s-abc, s-abcd, s-xyz): give more of it`},
		{"t-", "", `no running or queued session is "t-" or starts with it`},
	} {
		got, err := resolveSession(live, tc.id)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("resolveSession(%q) = %v, %v; want the error %q", tc.id, got.Session, err, tc.err)
			}
			continue
		}
		if err != nil || got.Session != tc.want {
			t.Errorf("resolveSession(%q) = %v, %v; want %s", tc.id, got.Session, err, tc.want)
		}
	}
}
