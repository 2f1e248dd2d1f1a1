// Package testdeps gives tests the programs they drive, so that `go test ./...` passes
// on a fresh machine with only Go, Node.js, Python and gcc:
//
//   - programs that are Go modules (Jaeger, Prometheus and promtool, kustomize) are
//     taken from PATH when there, else built on first use from a pinned version into
//     the user's cache (os.UserCacheDir()/agentmux/tools), once per machine, one
//     build at a time across the test processes of a run;
//
//   - what only a system package gives (Chromium, systemd-analyze, iproute2, strace)
//     or root: a test outside CI skips, saying what to install; under CI=true it
//     fails, as .ci/run installs them. Each skip is also written to the file
//     $AGENTMUX_TEST_SKIPS names, which `go run ./internal/testrun` lists at the end
//     of the run.
//
//     bin := testdeps.Jaeger(t)                      // built once, then found in the cache
//     chromium := testdeps.System(t, "chromium", "Debian's chromium")
//     testdeps.Root(t, "to make a network namespace")
//
// Everything here is safe for tests running in parallel, in one process or several.
package testdeps
