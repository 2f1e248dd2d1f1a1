package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/internal/proctest"
)

// TestMain fails the package's tests if any of them leaves a goroutine running.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, proctest.Leaks()...) }

// TestReportListsSkipsByWhatTheyNeed: the skips the tests wrote, one line each (the
// same test twice, as a parallel run may), are listed once, grouped by what they need.
func TestReportListsSkipsByWhatTheyNeed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "skips")
	lines := "TestB\tchromium (Debian's chromium)\nTestA\tchromium (Debian's chromium)\nTestA\tchromium (Debian's chromium)\nTestImage\troot, to chroot\n"
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	report(path, &out)
	want := "\nSkipped for want of what only a system package or root gives (install it, or run as root, to run them; .ci/run has all of it):\n" +
		"  chromium (Debian's chromium): TestA, TestB\n  root, to chroot: TestImage\n"
	if out.String() != want {
		t.Errorf("report:\n%q\nwant\n%q", out.String(), want)
	}
	out.Reset()
	report(filepath.Join(t.TempDir(), "none"), &out)
	if out.Len() != 0 {
		t.Errorf("with no skips, the report says %q", out.String())
	}
}
