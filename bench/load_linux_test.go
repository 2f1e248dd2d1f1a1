package bench

import (
	"bytes"
	"context"
	"log/slog"
	"os/exec"
	"strings"
	"testing"
)

// TestABusyMachineIsMarked: a run during which another process keeps a core busy is
// marked busy, in the report and its table.
func TestABusyMachineIsMarked(t *testing.T) {
	hog := exec.Command("sh", "-c", "while :; do :; done")
	if err := hog.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = hog.Process.Kill()
		_ = hog.Wait()
	})
	c := small(AgentInProc)
	rep, err := Run(context.Background(), c, slog.New(slog.DiscardHandler), noProgress)
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Systems[0]
	if !s.Busy || s.OthersCPU < 0.25 {
		t.Errorf("a run beside a busy loop: busy %v, others kept %.2f cores busy", s.Busy, s.OthersCPU)
	}
	var table bytes.Buffer
	WriteTable(&table, rep)
	if !strings.Contains(table.String(), "agentmux (busy)") || !strings.Contains(table.String(), "their figures measure the neighbours too") {
		t.Errorf("the table does not mark the busy run:\n%s", table.String())
	}
}
