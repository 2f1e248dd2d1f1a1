package permission

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRulesFileRoundTrip: rules written short or as tables read back; adding and
// removing rewrites the file with who gave each rule, and a file that does not exist
// yet holds no rules.
func TestRulesFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.toml")
	f, err := ReadFile(path)
	if err != nil || len(f.Allow)+len(f.Deny)+len(f.Ask) != 0 {
		t.Fatalf("a missing rules file: %+v, %v; want no rules, no error", f, err)
	}
	if err := os.WriteFile(path, []byte(`# by hand
allow = ["Bash(npm test:*)"]

[[deny]]
rule = "Bash(git push:*)"
by = "human:ana@example.com"
at = 2026-11-27T09:12:00Z
`), 0o600); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	err = UpdateFile(path, "rules of supervisor policy", func(f *File) (bool, error) {
		if !slices.Equal(f.Rules(Allow), []string{"Bash(npm test:*)"}) || f.Deny[0].By != "human:ana@example.com" {
			t.Errorf("read %+v", f)
		}
		added := f.Add(Allow, Entry{Rule: "Edit(./src/**)", By: "human:bo", At: at, Host: "coder", Session: "s-1", Request: "h-1"})
		again := f.Add(Allow, Entry{Rule: "Edit(./src/**)"})
		moved := f.Add(Allow, Entry{Rule: "Bash(git push:*)"})
		if !added || again || !moved {
			t.Errorf("Add reported added %v, again %v, moved %v; want true, false, true", added, again, moved)
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(data), "# rules of supervisor policy\n") {
		t.Errorf("the rewritten file starts %q; want its header", data[:min(len(data), 60)])
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("the rewritten file is %v; want the mode it had, 0600", st.Mode().Perm())
	}
	f, err = ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Bash(npm test:*)", "Edit(./src/**)", "Bash(git push:*)"}; !slices.Equal(f.Rules(Allow), want) || len(f.Deny) != 0 {
		t.Errorf("allow %q, deny %q; want allow %q, deny none", f.Rules(Allow), f.Rules(Deny), want)
	}
	if e := f.Allow[1]; e.By != "human:bo" || !e.At.Equal(at) || e.Request != "h-1" || e.Session != "s-1" || e.Host != "coder" {
		t.Errorf("the added entry read back %+v", e)
	}
	if err := f.Check(Paths{Root: "/repo"}); err != nil {
		t.Error(err)
	}
}

// TestRulesFileRefusesWhatItCannotRead: a wrong key or a rule that does not parse is an
// error that says which, never rules silently dropped.
func TestRulesFileRefusesWhatItCannotRead(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct{ text, want string }{
		"key":   {`allows = ["Bash(ls)"]`, "unknown keys allows"},
		"field": {"[[allow]]\nrule = \"Bash(ls)\"\nwho = \"x\"\n", `unknown key "who"`},
		"type":  {`allow = [3]`, "a rule is a string or a table"},
		"empty": {"[[allow]]\nby = \"x\"\n", "needs rule"},
	} {
		path := filepath.Join(dir, name+".toml")
		if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v; want an error naming the file and saying %q", name, err, tc.want)
		}
	}
	f := &File{Allow: []Entry{{Rule: "Bash("}}}
	if err := f.Check(Paths{}); err == nil || !strings.Contains(err.Error(), "allow") {
		t.Errorf("Check of a rule that does not parse: %v; want an error naming its list", err)
	}
}

// TestRulesFileUpdatesDoNotLoseEachOther: processes updating one file at once (nodes
// sharing a manifest's folder) each see the file as the one before left it.
func TestRulesFileUpdatesDoNotLoseEachOther(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.toml")
	var wg sync.WaitGroup
	const n = 16
	for i := range n {
		wg.Go(func() {
			err := UpdateFile(path, "", func(f *File) (bool, error) {
				return f.Add(Allow, Entry{Rule: "Bash(job" + strings.Repeat("x", i) + ":*)"}), nil
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	f, err := ReadFile(path)
	if err != nil || len(f.Allow) != n {
		t.Fatalf("after %d updates at once the file holds %d rules (%v); want each", n, len(f.Allow), err)
	}
}
