package sandbox

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "write the Seatbelt profile's golden file anew")

// TestSeatbeltProfile pins the profile a node's policy comes to on macOS: writes only to
// the working, temporary and listed trees and the devices; no reads or writes of the
// state, store and credentials; no writes of the manifest; no connections to the node's
// ports; signals within its own sandbox. Run with -update to write it anew, and read
// the difference.
func TestSeatbeltProfile(t *testing.T) {
	const root = "/nonexistent-agentmux"
	p := Policy{
		Write:       []string{root + "/work", root + "/tmp/agentmux-hosts.claude-1", root + "/cache \"quoted\""},
		ReadDeny:    []string{root + "/state", root + "/store", root + "/creds/node.creds"},
		WriteDeny:   []string{root + "/work/agentmux.toml"},
		ConnectDeny: []uint16{4222, 6222, 9090, 9470},
	}
	got, err := p.Seatbelt("hosts.claude")
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "seatbelt.sb")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("the profile:\n%s\nwant (%s):\n%s", got, golden, want)
	}
}

// TestSeatbeltAgreesWithLandlock: for the files of a working tree holding a denied
// directory and the manifest, and for files beyond it, the Seatbelt profile lets a
// program read and write exactly what the Landlock grants do.
func TestSeatbeltAgreesWithLandlock(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"work/a.txt", "work/sub/x", "work/state/node.creds", "work/agentmux.toml", "state2/cred", "other/x"} {
		path := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := Policy{Write: []string{filepath.Join(root, "work")}, ReadDeny: []string{filepath.Join(root, "work/state"), filepath.Join(root, "state2")},
		WriteDeny: []string{filepath.Join(root, "work/agentmux.toml")}}
	grants, err := p.grants()
	if err != nil {
		t.Fatal(err)
	}
	rules, err := p.seatbeltRules()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path        string
		read, write bool
	}{
		{"work/a.txt", true, true}, {"work/sub/x", true, true}, {"work/state/node.creds", false, false},
		{"work/agentmux.toml", true, false}, {"state2/cred", false, false}, {"other/x", true, false},
		{"/dev/null", true, true},
	} {
		path := c.path
		if !filepath.IsAbs(path) {
			path = filepath.Join(root, path)
		}
		llRead, llWrite := landlockAllows(grants, path)
		sbRead, sbWrite := seatbeltReads(rules, path), seatbeltWrites(rules, path)
		if llRead != c.read || llWrite != c.write {
			t.Errorf("%s under Landlock: read %v, write %v; want %v, %v", c.path, llRead, llWrite, c.read, c.write)
		}
		if sbRead != llRead || sbWrite != llWrite {
			t.Errorf("%s under Seatbelt: read %v, write %v; Landlock: %v, %v", c.path, sbRead, sbWrite, llRead, llWrite)
		}
	}
}

// landlockAllows is what grants let a program do to path: read it, write it.
func landlockAllows(grants []grant, path string) (read, write bool) {
	for _, g := range grants {
		if path == g.path || g.dir && within(path, g.path) {
			read = true
			write = write || g.write
		}
	}
	return read, write
}

// seatbeltWrites reports whether rules let a program write path (absolute and
// resolved): the last rule that names it for writing decides, as Seatbelt's does.
func seatbeltWrites(rules []sbRule, path string) bool {
	return seatbeltDecides(rules, path, "file-write*")
}

// seatbeltReads reports whether rules let a program read path.
func seatbeltReads(rules []sbRule, path string) bool {
	return seatbeltDecides(rules, path, "file-read*")
}

func seatbeltDecides(rules []sbRule, path, op string) bool {
	allowed := true // (allow default)
	for _, r := range rules {
		if !strings.Contains(r.ops, op) {
			continue
		}
		if len(r.paths) == 0 && len(r.ports) == 0 && r.target == "" {
			allowed = r.allow
			continue
		}
		for _, p := range r.paths {
			if path == p.path || p.tree && within(path, p.path) {
				allowed = r.allow
				break
			}
		}
	}
	return allowed
}
