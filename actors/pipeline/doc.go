// Package pipeline is the actor that runs one pipeline run: its stages one after
// another, each a listen session on its host, each stage's prompt built from the run's
// params and the earlier stages' results.
//
// A run's state lives in the replicated KV bucket agentmux_pipelines (store.PipelineStore)
// and is written before each stage starts and after it ends, with a compare-and-set:
// the node that takes over a run whose node died reads where it got to, starts the
// stage that was running again, and never runs a finished stage twice.
//
// A Run is spawned by the router, which owns the run's task; the Run asks its parent
// to run each stage's session (RunStage), receives the session's agent.Result, and
// tells its parent when the run has ended (Ended).
package pipeline
