package proctest

import "go.uber.org/goleak"

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
