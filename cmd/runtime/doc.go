// Command runtime is the agentmux CLI: run a demo, run one session, run a node, submit
// tasks to it, watch its events, validate a manifest, or act as the scripted agent.
package main
