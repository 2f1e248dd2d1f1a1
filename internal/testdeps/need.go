package testdeps

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// EnvSkips names the file each skip for want of a system package is appended to.
const EnvSkips = "AGENTMUX_TEST_SKIPS"

// Need skips t outside CI for what only a system package (or root) gives, saying what
// to install; under CI=true it fails t, as .ci/run installs everything.
func Need(t testing.TB, what string) {
	t.Helper()
	need(t, what, "install it to run this test (.ci/run installs everything)")
}

// need skips t (or fails it under CI) for want of what, saying how to have it.
func need(t testing.TB, what, how string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("needs %s, which .ci/run has", what)
	}
	if path := os.Getenv(EnvSkips); path != "" {
		if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
			// One short line per skip: appends this small are not interleaved.
			_, _ = fmt.Fprintf(f, "%s\t%s\n", t.Name(), what)
			_ = f.Close()
		}
	}
	t.Skipf("needs %s; %s", what, how)
}

// System is the path of program name from a system package: PATH's, else t is skipped
// (outside CI) or fails (under CI), saying to install pkg.
func System(t testing.TB, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		Need(t, fmt.Sprintf("%s (%s)", name, pkg))
	}
	return path
}

// Root skips t outside CI unless it runs as root, saying why it needs root; CI runs as
// root.
func Root(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		need(t, "root, "+why, "run the tests as root to run it (CI does)")
	}
}

// Cgroups skips t outside CI when err (shim.CheckCgroups's) says this process may not
// make cgroups, saying how to have them; CI runs as root, which may.
func Cgroups(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Log(err)
		need(t, "a cgroup v2 this user may make cgroups in", "run the tests as root, or in a cgroup systemd delegates to your user (Delegate=yes), to run it")
	}
}
