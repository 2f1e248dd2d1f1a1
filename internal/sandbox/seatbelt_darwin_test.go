//go:build darwin

package sandbox_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/agentmux/agentmux/internal/sandbox"
)

// TestSeatbeltRefusesWhatLandlockRefuses plays an agent under sandbox-exec on macOS:
// it writes its working directory and its temporary one, and is refused writing
// beyond them, reading the node's state directory, writing the manifest, and
// connecting to the node's port. (CI runs on Linux: this runs where macOS does.)
func TestSeatbeltRefusesWhatLandlockRefuses(t *testing.T) {
	if sandbox.Mechanism() != "seatbelt" {
		t.Skip("needs /usr/bin/sandbox-exec, part of macOS")
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	state, work, outside, manifest := filepath.Join(root, "state"), filepath.Join(root, "work"), filepath.Join(root, "outside"), filepath.Join(root, "agentmux.toml")
	for _, d := range []string{state, work, outside} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for path, text := range map[string]string{filepath.Join(state, "operator.nk"): "SUAxxxx", manifest: "[hosts.a]\n"} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	bus, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	go func() {
		for {
			c, err := bus.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := bus.Addr().(*net.TCPAddr).Port
	sb := sandbox.New("hosts.test", sandbox.Policy{Write: []string{work}, ReadDeny: []string{state}, WriteDeny: []string{manifest},
		ConnectDeny: []uint16{uint16(port)}, Temp: true})
	defer sb.Close()
	for _, c := range []struct {
		script string
		ok     bool
	}{
		{"echo x > " + filepath.Join(work, "a"), true},
		{`echo x > "$TMPDIR/a"`, true},
		{"echo x > " + filepath.Join(outside, "a"), false},
		{"cat " + filepath.Join(state, "operator.nk"), false},
		{"echo x >> " + manifest, false},
		{"cat " + manifest, true},
		{"nc -z 127.0.0.1 " + strconv.Itoa(port), false},
	} {
		cmd := exec.Command("/bin/sh", "-c", c.script)
		if err := sb.Start(cmd); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		if (err == nil) != c.ok {
			t.Errorf("%s in the sandbox: %v; want allowed %v", c.script, err, c.ok)
		}
	}
}
