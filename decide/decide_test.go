package decide

import (
	"context"
	"testing"

	"github.com/agentmux/agentmux/config"
)

func load(t *testing.T) *config.Manifest {
	t.Helper()
	m, err := config.Load("../config/testdata/architecture.toml")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func decide(t *testing.T, d Decider, typ, text string) Decision {
	t.Helper()
	dec, err := d.Decide(context.Background(), &Request{Type: typ, Text: text})
	if err != nil {
		t.Fatal(err)
	}
	return dec
}

func TestRuleFirstMatchPerType(t *testing.T) {
	d, err := New(load(t).Supervisors["security"], Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if dec := decide(t, d, "question", "Which AUTH scheme?"); string(dec.Value) != `"Use RS256 with rotating keys"` || dec.Decider != "rule:security" {
		t.Fatalf("question: %+v", dec)
	}
	if dec := decide(t, d, "approval", "run rm -rf /tmp/x"); string(dec.Value) != `"no"` {
		t.Fatalf("approval: %+v", dec)
	}
	// The approval rule must not answer a question, and nothing matching falls through.
	if dec := decide(t, d, "question", "may I rm -rf?"); dec.Verdict != UseDefault || dec.Value != nil {
		t.Fatalf("fall-through: %+v", dec)
	}
}

func TestStaticAnswersByType(t *testing.T) {
	d, err := New(load(t).Supervisors["default"], Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if dec := decide(t, d, "approval", "anything"); string(dec.Value) != `"yes"` || dec.Decider != "static:default" {
		t.Fatalf("approval: %+v", dec)
	}
	if dec := decide(t, d, "tool_call", "grep"); string(dec.Value) != `{"error":"no tools here"}` {
		t.Fatalf("tool_call: %+v", dec)
	}
}

func TestUnknownStrategy(t *testing.T) {
	if _, err := New(&config.Supervisor{Name: "x", Strategy: "external"}, Deps{}); err == nil {
		t.Fatal("an external supervisor has no local decider")
	}
}
