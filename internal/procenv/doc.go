// Package procenv builds the explicit environment of the processes agentmux starts:
// agents, command supervisors and command tools never inherit the runtime's whole
// environment, only what carries no secret and what their manifest table names.
package procenv
