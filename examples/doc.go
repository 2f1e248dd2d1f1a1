// Package examples holds example manifests and middleware agents (Python, TypeScript)
// that speak the native protocol, and the test that runs them for real under agentmux.
package examples
