package agent

import (
	"fmt"
	"strings"
	"testing"
)

// TestStderrTailKeepsTheCause: a Node agent that cannot find its module prints the
// error, then a stack trace and Node's version; the crash's message quotes the error
// first, then the end of stderr, bounded.
func TestStderrTailKeepsTheCause(t *testing.T) {
	var tail stderrTail
	node := `node:internal/modules/cjs/loader:1228
  throw err;
  ^

Error: Cannot find module '/srv/agent/dist/agent.js'
    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)
    at Module._load (node:internal/modules/cjs/loader:1051:27)
    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:174:12)
    at node:internal/main/run_main_module:28:49 {
  code: 'MODULE_NOT_FOUND',
  requireStack: []
}

Node.js v22.11.0`
	for line := range strings.SplitSeq(node, "\n") {
		if line != "" {
			tail.add(line)
		}
	}
	got := tail.String()
	if want := ": Error: Cannot find module '/srv/agent/dist/agent.js'; last stderr: node:internal/modules/cjs/loader:1228 | "; !strings.HasPrefix(got, want) {
		t.Errorf("got %q; want it to start %q", got, want)
	}
	if !strings.HasSuffix(got, " | Node.js v22.11.0") {
		t.Errorf("got %q; want the last line last", got)
	}

	// Long output: the last 20 lines, within 4 KiB, the cause kept past them.
	tail = stderrTail{}
	tail.add("Traceback (most recent call last):")
	tail.add("ModuleNotFoundError: No module named 'agentmux_sdk'")
	for i := range 100 {
		tail.add(fmt.Sprintf("noise %03d %s", i, strings.Repeat("x", 300)))
	}
	got = tail.String()
	if !strings.HasPrefix(got, ": ModuleNotFoundError: No module named 'agentmux_sdk'; last stderr: ") || len(got) > stderrTailBytes+200 ||
		!strings.Contains(got, "noise 099") || strings.Contains(got, "noise 080") {
		t.Errorf("got %d bytes: %.300q…; want the cause first, then the last lines within 4 KiB", len(got), got)
	}

	// A lone line is said once; a line that is not an error is not taken for one.
	tail = stderrTail{}
	tail.add("panic: out of cheese")
	if got := tail.String(); got != "; last stderr: panic: out of cheese" {
		t.Errorf("got %q", got)
	}
	tail = stderrTail{}
	tail.add("starting up")
	tail.add("init: the API key is not set")
	if got := tail.String(); got != "; last stderr: starting up | init: the API key is not set" {
		t.Errorf("got %q", got)
	}
}
