package node

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/sim"
)

// TestMain doubles as the scripted agent: with AGENTMUX_SIM set, the test binary is
// `runtime sim` (the os/exec helper-process pattern).
func TestMain(m *testing.M) {
	if mode := os.Getenv("AGENTMUX_SIM"); mode != "" {
		opts := sim.Options{Init: os.Getenv("AGENTMUX_SIM_INIT"), Capabilities: []string{"interrupt", "message"}, Stderr: os.Stderr}
		err := sim.Run(os.Stdin, os.Stdout, opts)
		if exit, ok := err.(*sim.ErrExit); ok {
			os.Exit(exit.Code)
		}
		if err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m,
		// The NATS server's and protoactor's process-wide background goroutines.
		goleak.IgnoreAnyFunction("github.com/nats-io/nats-server/v2/server.(*Server).startRateLimitLogExpiration.func1"),
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewActorSystemWithConfig.func1"),
		goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/actor.(*ActorSystem).deadLetterThrottle"),
	)
}
