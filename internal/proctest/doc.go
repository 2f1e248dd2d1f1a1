// Package proctest finds the processes a test started, by a marker in their
// environment, so tests can show that none is left behind, finds them ports, and says
// which goroutines left running are the libraries' and not leaks (Leaks), and waits
// for what a test expects to come about (Eventually).
package proctest
