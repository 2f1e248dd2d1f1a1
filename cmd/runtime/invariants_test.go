package main

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/internal/invariants"
)

// checkInvariants asserts docs/reliability.md's invariants over the fleet's whole audit,
// once a fault test has settled (see invariants.Violations).
func checkInvariants(t *testing.T, js jetstream.JetStream, ended ...string) {
	t.Helper()
	for _, v := range invariants.Violations(auditRecords(t, js), ended) {
		t.Error(v)
	}
}
