// Package router runs the Router actor, one per node: it takes sessions from local
// callers and from the JetStream work queue (pulling only as many tasks per host as it
// has free process slots), keeps a pool of agent processes per host (a process serves
// many sessions in turn), retries failed sessions, runs pipelines, publishes session
// lifecycle events and audit records, drains, and shuts everything down in order. It
// does not route requests: each agent matches its requests against the manifest's
// [[routes]] (config.Routes.Match).
//
// Concurrency promise: Receive never blocks. Task pullers are goroutines (one per host)
// that hold a slot before they fetch and send each task to the actor; slots are released
// by the actor when the task's session ends. The JetStream consumers they pull from are
// made before the actor exists (NewIntake). Control requests on agentmux.ctl.<node>.*
// are answered from NATS callbacks through actor futures. A reply channel a caller
// gave (Submit's, RunPipeline's) is sent to without waiting: its caller buffers one
// reply, and a full one loses it, logged, rather than stall the router.
//
// Lifecycle: the router is taking work, draining, stopping or stopped (lifecycle.go);
// the moves between them are one table, and a move it lacks is refused.
//
//	cfg := router.Config{Env: env, Manifest: m, JS: js, ...} // env: agent.NewEnv
//	cfg.Intake, err = router.NewIntake(ctx, js, cfg)
//	pid := system.Root.Spawn(router.Props(cfg))
//	system.Root.Send(pid, &router.Submit{Host: "worker", Start: &agent.StartSession{Session: "s-1", Prompt: "…", Reply: ch}})
package router
