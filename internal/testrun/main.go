package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentmux/agentmux/internal/testdeps"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	prepareOnly := len(args) > 0 && args[0] == "-prepare"
	// The programs the tests drive that Go modules build, built first (once per
	// machine), so that no test waits minutes for one while others run beside it.
	if err := testdeps.Prepare(func(format string, args ...any) { fmt.Fprintf(stderr, "testrun: "+format+"\n", args...) }); err != nil {
		fmt.Fprintln(stderr, "testrun:", err)
		return 1
	}
	if prepareOnly {
		return 0
	}
	if len(args) == 0 { // the README's: every package, under the race detector, uncached
		args = []string{"-race", "-count=1", "-timeout", "30m", "./..."}
	}
	skips, err := os.CreateTemp("", "agentmux-skips-")
	if err != nil {
		fmt.Fprintln(stderr, "testrun:", err)
		return 1
	}
	skips.Close()
	defer os.Remove(skips.Name())

	start := time.Now()
	cmd := exec.Command("go", append([]string{"test"}, args...)...)
	cmd.Env = append(os.Environ(), testdeps.EnvSkips+"="+skips.Name())
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// ^C reaches go test too (it is in the terminal's process group): wait for it to
	// end its test processes rather than leave them.
	signal.Ignore(os.Interrupt, syscall.SIGTERM)
	err = cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		fmt.Fprintln(stderr, "testrun:", err)
		return 1
	}
	fmt.Fprintf(stdout, "\ngo test %s: %s in %v\n", strings.Join(args, " "), map[bool]string{true: "passed", false: "FAILED"}[code == 0], time.Since(start).Round(time.Second))
	report(skips.Name(), stdout)
	return code
}

// report lists the skipped tests by what they need.
func report(path string, w io.Writer) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	byNeed := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		test, need, ok := strings.Cut(sc.Text(), "\t")
		if ok && !slices.Contains(byNeed[need], test) {
			byNeed[need] = append(byNeed[need], test)
		}
	}
	if len(byNeed) == 0 {
		return
	}
	needs := make([]string, 0, len(byNeed))
	for need := range byNeed {
		needs = append(needs, need)
	}
	slices.Sort(needs)
	fmt.Fprintln(w, "\nSkipped for want of what only a system package or root gives (install it, or run as root, to run them; .ci/run has all of it):")
	for _, need := range needs {
		tests := byNeed[need]
		slices.Sort(tests)
		fmt.Fprintf(w, "  %s: %s\n", need, strings.Join(tests, ", "))
	}
}
