package proctest

import (
	"fmt"
	"os"

	"go.uber.org/goleak"
)

// Leaks are goleak's options for agentmux's tests: the goroutines libraries keep for the
// whole process, or for a moment after their work, are not the tests' leaks.
func Leaks() []goleak.Option {
	return []goleak.Option{
		// The NATS server's and protoactor's process-wide background goroutines.
		goleak.IgnoreAnyFunction("github.com/nats-io/nats-server/v2/server.(*Server).startRateLimitLogExpiration.func1"),
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewActorSystemWithConfig.func1"),
		goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/actor.(*ActorSystem).deadLetterThrottle"),
		// The dead-letter log throttle: a timer goroutine that ends one second after a
		// dead letter (a message to an actor that has just stopped).
		goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
	}
}

// ExitCode is the exit code of a test binary whose TestMain does more than run the
// tests (a child-process mode): a passing run's code becomes 1, with the goroutines
// named on stderr, if a test left one running (goleak.VerifyTestMain, for the others).
func ExitCode(code int) int {
	if code == 0 {
		if err := goleak.Find(Leaks()...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			return 1
		}
	}
	return code
}
