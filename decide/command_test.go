package decide

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/proctest"
)

// script writes an executable shell script and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "decide.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func commandDecision(t *testing.T, body string, within time.Duration) (Decision, time.Duration) {
	t.Helper()
	d := NewCommand(&config.Supervisor{Name: "script", Process: config.Process{Command: script(t, body), Env: map[string]string{"MODE": "test"}}}, nil, nil)
	r := request(t, "s1", `{"type":"approval","id":"a1","description":"deploy v2 to staging"}`, within)
	begun := time.Now()
	dec, err := d.Decide(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return dec, time.Since(begun)
}

func TestCommandAnswers(t *testing.T) {
	// The script sees the request on stdin and its env; it answers from both.
	dec, _ := commandDecision(t, `read req; case "$req" in *staging*) echo "{\"value\":\"yes\",\"reason\":\"staging in $MODE\"}";; *) echo '{"value":"no"}';; esac`, time.Minute)
	if string(dec.Value) != `"yes"` || dec.Decider != "command:script" || dec.Reason != "staging in test" {
		t.Fatalf("decision %+v", dec)
	}
}

func TestCommandFailsClosed(t *testing.T) {
	for _, c := range []struct{ name, body, reason string }{
		{"declines", `echo '{"cancelled":true,"reason":"not my call"}'`, "the command declined: not my call"},
		{"non-zero exit", `echo oops >&2; exit 3`, "exit status 3; stderr: oops"},
		{"garbage", `echo 'approve!'`, `want one line {"value": …} or {"cancelled": true} on stdout, got "approve!"`},
		{"silence", `exit 0`, `got ""`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dec, _ := commandDecision(t, c.body, time.Minute)
			if dec.Verdict != Decline || !strings.Contains(dec.Reason, c.reason) {
				t.Fatalf("decision %+v; want cancelled with %q", dec, c.reason)
			}
		})
	}
}

func TestCommandHangIsKilledAtTheDeadline(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	dec, took := commandDecision(t, `echo $$ > `+pidFile+`; sleep 3600 & wait`, 500*time.Millisecond)
	if dec.Verdict != Decline || !strings.Contains(dec.Reason, "did not finish before the deadline") {
		t.Fatalf("decision %+v", dec)
	}
	if took > 5*time.Second {
		t.Fatalf("a hung command held the decision for %v", took)
	}
	// The whole group is gone: the script's sleep child too.
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pgid := strings.TrimSpace(string(b))
	proctest.Eventually(t, "process group "+pgid+" is gone", func() bool { return !groupAlive(t, pgid) })
}

// groupAlive reports whether a live (not zombie) process is in process group pgid.
func groupAlive(t *testing.T, pgid string) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(fields) > 2 && fields[2] == pgid && fields[0] != "Z" {
			return true
		}
	}
	return false
}

func TestCommandToolErrorsReachTheAgent(t *testing.T) {
	m := &config.Manifest{Tools: map[string]*config.Tool{
		"fails": {Name: "fails", Process: config.Process{Command: "sh", Args: []string{"-c", "echo 'no such user' >&2; exit 1"}}, Timeout: config.Duration(5 * time.Second)},
		"prose": {Name: "prose", Process: config.Process{Command: "sh", Args: []string{"-c", "echo hello"}}, Timeout: config.Duration(5 * time.Second)},
		"echo":  {Name: "echo", Process: config.Process{Command: "cat"}, Timeout: config.Duration(5 * time.Second)},
	}, Supervisors: map[string]*config.Supervisor{}}
	d, err := New(&config.Supervisor{Name: "s", Strategy: config.StrategyStatic, SupervisorDerived: config.SupervisorDerived{AnswersJSON: map[string]json.RawMessage{"question": json.RawMessage(`"q"`)}}}, Deps{Manifest: m})
	if err != nil {
		t.Fatal(err)
	}
	for tool, want := range map[string]string{
		"fails": `exit status 1; stderr: no such user`,
		"prose": `returned something that is not JSON`,
		"echo":  `{"n":1}`,
	} {
		dec := decideOK(t, d, request(t, "s1", `{"type":"tool_call","id":"t","tool":"`+tool+`","args":{"n":1}}`, time.Minute))
		if !strings.Contains(string(dec.Value), want) && !strings.Contains(dec.Reason, want) {
			t.Errorf("%s: %+v; want %q", tool, dec, want)
		}
		if dec.Decider != "tool:"+tool {
			t.Errorf("%s decided by %q", tool, dec.Decider)
		}
	}
	// A tool the manifest does not define goes to the strategy.
	dec := decideOK(t, d, request(t, "s1", `{"type":"tool_call","id":"t","tool":"other","args":{}}`, time.Minute))
	if dec.Verdict != UseDefault {
		t.Errorf("undefined tool: %+v", dec)
	}
}
