package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestShortRunWritesTheReports(t *testing.T) {
	dir := t.TempDir()
	jsonPath, pngPath := filepath.Join(dir, "report.json"), filepath.Join(dir, "plot.png")
	var stdout, stderr bytes.Buffer
	code := run([]string{"--sessions", "10", "--progress", "20", "--questions", "2", "--think", "5ms", "--question-timeout", "200ms",
		"--runs", "2", "--json", jsonPath, "--png", pngPath}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	var runs struct {
		Runs []struct {
			Systems []struct {
				Name     string
				Sessions int
			}
		}
		Medians []struct{ Figure string }
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &runs); err != nil || len(runs.Runs) != 2 || runs.Runs[0].Systems[0].Name != "agentmux" || runs.Runs[0].Systems[0].Sessions != 10 {
		t.Fatalf("report %s: %v", b, err)
	}
	if st, err := os.Stat(pngPath); err != nil || st.Size() == 0 {
		t.Fatalf("plot: %v", err)
	}
	for _, want := range []string{"agentmux", "medians of 2 runs", "plot: " + pngPath} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if strings.Contains(stderr.String(), "\r") {
		t.Error("a progress bar was drawn on something that is not a terminal")
	}
}

func TestBadFlagsExit2(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--agent", "thread"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "use process or inproc") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}
