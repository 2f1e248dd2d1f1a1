package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = dispatch(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestValidate(t *testing.T) {
	code, out, _ := runCLI("validate", "-c", "../../examples/worker.toml")
	if code != exitOK || !strings.Contains(out, "ok (1 hosts, 2 supervisors, 2 routes)") {
		t.Fatalf("good manifest: exit %d, %q", code, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.toml")
	if err := os.WriteFile(bad, []byte("[hosts.w]\ncommand = \"x\"\ntimeout = \"10x\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI("validate", "-c", bad)
	if code != exitUsage || !strings.Contains(errOut, `hosts.w.timeout (bad.toml:3:1): "10x" is not a duration; use seconds or "90s"`) {
		t.Fatalf("bad manifest: exit %d, %q", code, errOut)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"nonsense"},
		{"run", "-c", "../../examples/worker.toml", "worker"},
		{"run", "-c", "../../examples/worker.toml", "nohost", "prompt"},
		{"submit", "-c", "../../examples/worker.toml"},
		{"validate", "-c", "/does/not/exist.toml"},
	} {
		if code, _, errOut := runCLI(args...); code != exitUsage || errOut == "" {
			t.Errorf("runtime %v: exit %d, stderr %q; want exit 2 with a message", args, code, errOut)
		}
	}
}

func TestUnsafeStartRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "open.toml")
	if err := os.WriteFile(path, []byte("[nats]\nlisten = \"0.0.0.0:4222\"\n[hosts.w]\ncommand = \"x\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"validate", "up"} {
		code, _, errOut := runCLI(cmd, "-c", path)
		if code != exitUsage || !strings.Contains(errOut, `nats.listen (open.toml:2:1): "0.0.0.0:4222" lets in anyone who can reach it, and no [[nats.users]] are defined`) {
			t.Errorf("runtime %s on an open listener: exit %d, %q", cmd, code, errOut)
		}
	}
}
