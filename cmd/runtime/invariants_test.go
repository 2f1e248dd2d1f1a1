package main

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/internal/invariants"
	"github.com/agentmux/agentmux/internal/proctest"
)

// checkInvariants asserts docs/reliability.md's invariants over the fleet's whole audit,
// once a fault test has settled (see invariants.Violations). A record whose publish met
// the fault is published again until stored, so it may land after later ones (an answer
// before its request): the audit is read again until it keeps them, for up to 30 s.
func checkInvariants(t *testing.T, js jetstream.JetStream, ended ...string) {
	t.Helper()
	var violations []string
	proctest.Poll(30*time.Second, 200*time.Millisecond, func() bool {
		violations = invariants.Violations(auditRecords(t, js), ended)
		return len(violations) == 0
	})
	for _, v := range violations {
		t.Error(v)
	}
}
