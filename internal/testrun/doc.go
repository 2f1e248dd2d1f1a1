// Command testrun runs agentmux's tests as the README says, and then lists together
// the tests skipped for want of what only a system package gives, with what to install:
//
//	go run ./internal/testrun                          # go test -race -count=1 -timeout 30m ./...
//	go run ./internal/testrun -run TestConsole ./cmd/runtime
//	go run ./internal/testrun -prepare                 # only build what the tests drive
//
// First it finds or builds the programs the tests drive that Go modules give (Jaeger,
// Prometheus, promtool, kustomize: internal/testdeps), once per machine.
// Its exit code is go test's. Under CI=true nothing is skipped: a missing system
// package fails its test instead (.ci/run installs them all).
package main
