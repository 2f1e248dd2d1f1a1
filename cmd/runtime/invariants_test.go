package main

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/internal/invariants"
)

// checkInvariants asserts docs/reliability.md's invariants over the fleet's whole audit,
// once a fault test has settled (see invariants.Violations). A record whose publish met
// the fault is published again until stored, so it may land after later ones (an answer
// before its request): the audit is read again until it keeps them, for up to 30 s.
func checkInvariants(t *testing.T, js jetstream.JetStream, ended ...string) {
	t.Helper()
	tick, deadline := time.NewTicker(200*time.Millisecond), time.After(30*time.Second)
	defer tick.Stop()
	for {
		violations := invariants.Violations(auditRecords(t, js), ended)
		if len(violations) == 0 {
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			for _, v := range violations {
				t.Error(v)
			}
			return
		}
	}
}
