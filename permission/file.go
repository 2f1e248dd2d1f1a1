package permission

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/BurntSushi/toml"
)

// A rules file holds permission rules a supervisor loads beside its manifest's
// ([supervisors.X] rules_file): the rules people gave "always" in the console, and
// those a team writes or reviews there. Each list holds rules as plain strings, or as
// tables that say who added the rule, when, and from which request:
//
//	allow = ["Bash(npm test:*)"]
//
//	[[deny]]
//	rule = "Bash(git push:*)"
//	by = "human:ana@example.com"
//	at = 2026-11-27T09:12:00Z
//	request = "h-…"
//
// agentmux rewrites the file when it adds or removes a rule: the rules and their
// fields stay, comments do not.

// Entry is one rule of a rules file and where it came from.
type Entry struct {
	Rule string    `toml:"rule" json:"rule"`
	By   string    `toml:"by,omitempty" json:"by,omitempty"` // its decider, human:<person>
	At   time.Time `toml:"at,omitzero" json:"at,omitzero"`
	// Host, Session and Request are the request it was given on.
	Host    string `toml:"host,omitempty" json:"host,omitempty"`
	Session string `toml:"session,omitempty" json:"session,omitempty"`
	Request string `toml:"request,omitempty" json:"request,omitempty"`
	Note    string `toml:"note,omitempty" json:"note,omitempty"`
}

// UnmarshalTOML reads an entry written as its rule alone, or as a table.
func (e *Entry) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case string:
		*e = Entry{Rule: v}
		return nil
	case map[string]any:
		for k, x := range v {
			var ok bool
			switch k {
			case "rule":
				e.Rule, ok = x.(string)
			case "by":
				e.By, ok = x.(string)
			case "host":
				e.Host, ok = x.(string)
			case "session":
				e.Session, ok = x.(string)
			case "request":
				e.Request, ok = x.(string)
			case "note":
				e.Note, ok = x.(string)
			case "at":
				e.At, ok = x.(time.Time)
			default:
				return fmt.Errorf("unknown key %q in a rule; a rule's keys are rule, by, at, host, session, request and note", k)
			}
			if !ok {
				return fmt.Errorf("%s = %v is a %T; write it as a string (at: a date-time, 2026-11-27T09:12:00Z)", k, x, x)
			}
		}
		if e.Rule == "" {
			return errors.New(`a rule's table needs rule = "Tool(specifier)"`)
		}
		return nil
	}
	return fmt.Errorf("a rule is a string or a table, not %T", v)
}

// File is a rules file's rules, checked deny, ask, allow as a manifest's are.
type File struct {
	Deny  []Entry `toml:"deny,omitempty" json:"deny"`
	Ask   []Entry `toml:"ask,omitempty" json:"ask"`
	Allow []Entry `toml:"allow,omitempty" json:"allow"`
}

// Verdicts lists the verdicts a rule can give, in the order they are checked.
func Verdicts() []Verdict { return []Verdict{Deny, Ask, Allow} }

// ParseVerdict reads the verdict a rules file's list gives: allow, ask or deny.
func ParseVerdict(s string) (Verdict, error) {
	if v := Verdict(s); slices.Contains(Verdicts(), v) {
		return v, nil
	}
	return None, fmt.Errorf("verdict %q: a rule allows, asks or denies", s)
}

// list is the file's list for v, nil for None.
func (f *File) list(v Verdict) *[]Entry {
	switch v {
	case Deny:
		return &f.Deny
	case Ask:
		return &f.Ask
	case Allow:
		return &f.Allow
	}
	return nil
}

// Entries are f's list for v.
func (f *File) Entries(v Verdict) []Entry {
	if l := f.list(v); l != nil {
		return *l
	}
	return nil
}

// Rules are the rules of f's list for v, as written.
func (f *File) Rules(v Verdict) []string {
	var out []string
	if l := f.list(v); l != nil {
		for _, e := range *l {
			out = append(out, e.Rule)
		}
	}
	return out
}

// Add puts e in f's list for v, and reports whether that changed f. A rule on
// another list is moved: a rule says one thing.
func (f *File) Add(v Verdict, e Entry) bool {
	moved := false
	for _, w := range Verdicts() {
		if w != v && f.Remove(w, e.Rule) {
			moved = true
		}
	}
	l := f.list(v)
	if slices.ContainsFunc(*l, func(x Entry) bool { return x.Rule == e.Rule }) {
		return moved
	}
	*l = append(*l, e)
	return true
}

// Remove takes rule off f's list for v, and reports whether it was there.
func (f *File) Remove(v Verdict, rule string) bool {
	l := f.list(v)
	n := len(*l)
	*l = slices.DeleteFunc(*l, func(x Entry) bool { return x.Rule == rule })
	return len(*l) < n
}

// Check parses every rule of f, resolving paths with p, and returns the first error,
// naming its list.
func (f *File) Check(p Paths) error {
	for _, v := range Verdicts() {
		for _, rule := range f.Rules(v) {
			if _, err := Parse(rule, p); err != nil {
				return fmt.Errorf("%s: %w", v, err)
			}
		}
	}
	return nil
}

// ReadFile reads the rules file at path; a file that does not exist yet holds no
// rules (the first rule saved writes it).
func ReadFile(path string) (*File, error) {
	f := &File{}
	md, err := toml.DecodeFile(path, f)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return f, nil
	case err != nil:
		return nil, fmt.Errorf("rules file %s: %w", path, err)
	}
	if extra := md.Undecoded(); len(extra) > 0 {
		keys := make([]string, len(extra))
		for i, k := range extra {
			keys[i] = k.String()
		}
		return nil, fmt.Errorf("rules file %s: unknown keys %s; a rules file holds deny, ask and allow", path, strings.Join(keys, ", "))
	}
	return f, nil
}

// UpdateFile changes the rules file at path with change, under a lock on its folder
// that other processes updating it take too, and writes it back in one rename when
// change reports a change. What change sees is the file as it is on disk.
func UpdateFile(path, header string, change func(*File) (bool, error)) error {
	dir := filepath.Dir(path)
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("rules file %s: its folder: %w", path, err)
	}
	defer d.Close()
	if err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("rules file %s: lock its folder: %w", path, err)
	}
	defer syscall.Flock(int(d.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing the folder unlocks it too
	f, err := ReadFile(path)
	if err != nil {
		return err
	}
	changed, err := change(f)
	if err != nil || !changed {
		return err
	}
	return f.write(path, header)
}

// write replaces the file at path with f, in one rename, keeping its mode.
func (f *File) write(path, header string) error {
	var b bytes.Buffer
	for _, line := range strings.Split(strings.TrimSpace(header), "\n") {
		if line != "" {
			b.WriteString("# " + line + "\n")
		}
	}
	if b.Len() > 0 {
		b.WriteString("\n")
	}
	if err := toml.NewEncoder(&b).Encode(f); err != nil {
		return fmt.Errorf("rules file %s: %w", path, err)
	}
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("rules file %s: %w (the folder must be writable by the node)", path, err)
	}
	defer os.Remove(tmp.Name()) // gone after the rename; left only by a failure
	if _, err := tmp.Write(b.Bytes()); err != nil {
		tmp.Close()
		return fmt.Errorf("rules file %s: %w", path, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("rules file %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("rules file %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("rules file %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rules file %s: %w", path, err)
	}
	return nil
}
