// Package gateway is the node's model gateway: the agents reach their models through
// it, on loopback, and never hold a provider's key. It speaks the APIs the agents use
// (Anthropic's Messages, OpenAI's Chat Completions and Responses), streaming included,
// and passes each call on to the manifest's [connections.X] with its key, which it read
// from the node's environment.
//
// Each agent process gets a Pass: a token of its own in its environment, good only
// while a session runs on it (Bind) and until the process ends (Revoke). What the
// provider counted in each answer (the usage of a stream's events, or of a whole
// answer) is told to the pass's report, as a Call: that, not what the agent says, is
// what the session spent.
//
//	g, err := gateway.New(gateway.Config{Connections: m.Connections, Pricing: m.Pricing, Metrics: set, Log: log})
//	err = g.Start("127.0.0.1:0")
//	pass, err := g.Issue("anthropic", func(c gateway.Call) { … })
//	cmd.Env = append(cmd.Env, pass.Env()...)
//	pass.Bind(session)
//	…
//	pass.Revoke()
package gateway
