package node

import (
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/sim"
)

// TestMain doubles as the scripted agent: with AGENTMUX_SIM set, the test binary is
// `agentmux sim` (the os/exec helper-process pattern).
func TestMain(m *testing.M) {
	if mode := os.Getenv("AGENTMUX_SIM"); mode != "" {
		opts := sim.Options{Init: os.Getenv("AGENTMUX_SIM_INIT"), Capabilities: []string{"interrupt", "message"}, Stderr: os.Stderr}
		if caps, ok := os.LookupEnv("AGENTMUX_SIM_CAPABILITIES"); ok {
			opts.Capabilities = strings.Fields(caps)
		}
		if path := os.Getenv("AGENTMUX_SIM_TRANSCRIPT"); path != "" {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
			if err != nil {
				os.Exit(1)
			}
			opts.Transcript = f // unbuffered: nothing is lost when the agent exits
		}
		err := sim.Run(os.Stdin, os.Stdout, opts)
		if exit, ok := err.(*sim.ErrExit); ok {
			os.Exit(exit.Code)
		}
		if err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m, proctest.Leaks()...)
}
