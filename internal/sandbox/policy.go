package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Policy is what a sandboxed program may do beyond reading the system.
type Policy struct {
	// Write are the trees the program may write: its working directory, the paths its
	// manifest lists.
	Write []string
	// ReadDeny are the trees it may neither read nor write: the node's state
	// directory, its store, credential files.
	ReadDeny []string
	// WriteDeny are the trees it may read but not write: the manifest.
	WriteDeny []string
	// ConnectDeny are the TCP ports it may not connect to, on any address: the node's
	// bus, cluster, metrics and console ports.
	ConnectDeny []uint16
	// Temp gives the program a temporary directory of its own, made when the sandbox
	// is built and removed by Close, as TMPDIR (replacing the one it would inherit).
	Temp bool
	// As is the user the program runs as, which only a process run as root may choose;
	// nil, the process's own. A process run as root with no As starts its programs, on
	// Linux, as root without any capability, unable to regain one by exec: no reading or
	// writing what only root's capabilities reach (another user's 0600 file,
	// /proc/<node>/environ), no tracing, mounting or loading.
	As *User
}

// User is who a program runs as: a uid, a gid and supplementary groups.
type User struct {
	Name   string // for messages
	Uid    uint32
	Gid    uint32
	Groups []uint32
}

// grant is one rule: path, and everything beneath it if it is a directory, readable
// (or writable too).
type grant struct {
	path  string
	dir   bool
	write bool
}

// devices are the device files and directories every program writes (or opens for
// writing): they lie outside any tree a policy names. Not /dev/shm: what a program
// leaves there is shared with every other, outlives it and is counted nowhere; one
// that needs POSIX shared memory is given it with sandbox_write.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts"}

// grants lists the rules p comes to: all of / readable but ReadDeny, p.Write and the
// devices writable but ReadDeny and WriteDeny. Paths are made absolute and resolved,
// so that a denied path reached through a symbolic link is still denied.
func (p Policy) grants() ([]grant, error) {
	readDeny, err := resolveAll(p.ReadDeny)
	if err != nil {
		return nil, err
	}
	writeDeny, err := resolveAll(p.WriteDeny)
	if err != nil {
		return nil, err
	}
	writeDeny = append(writeDeny, readDeny...)
	out, err := carve("/", false, readDeny, nil)
	if err != nil {
		return nil, err
	}
	for _, w := range p.Write {
		abs, err := resolve(w)
		if err != nil {
			return nil, err
		}
		if _, err := os.Lstat(abs); errors.Is(err, fs.ErrPermission) {
			continue // the program's user cannot reach it either: nothing to grant
		} else if err != nil {
			return nil, fmt.Errorf("sandbox: writable path %s: %w; create it, or take it out of sandbox_write", w, err)
		}
		if out, err = carve(abs, true, writeDeny, out); err != nil {
			return nil, err
		}
	}
	for _, d := range devices {
		if _, err := os.Stat(d); err == nil {
			out, _ = carve(d, true, writeDeny, out)
		}
	}
	return out, nil
}

// carve appends root's grant to out: root itself when no denied path lies within it,
// nothing when it lies within one, and each entry of root carved in turn otherwise.
// Symbolic links are left out: what one points to is granted where it lies, or not.
// A directory that cannot be listed is left out as well.
func carve(root string, write bool, deny []string, out []grant) ([]grant, error) {
	if slices.ContainsFunc(deny, func(d string) bool { return within(root, d) }) {
		return out, nil
	}
	fi, err := os.Lstat(root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return out, nil // gone since it was listed
		}
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if !slices.ContainsFunc(deny, func(d string) bool { return within(d, root) }) {
		return append(out, grant{path: root, dir: fi.IsDir(), write: write}), nil
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return out, nil
	}
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink != 0 {
			continue
		}
		if out, err = carve(filepath.Join(root, e.Name()), write, deny, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Carved lists the writable paths of p that hold a denied one, each with the first it
// holds: the program writes their other entries, but cannot create any directly in
// them, nor in any directory between them and the denied path.
func (p Policy) Carved() [][2]string {
	var out [][2]string
	denied := append(append([]string(nil), p.ReadDeny...), p.WriteDeny...)
	for _, w := range p.Write {
		for _, d := range denied {
			if in, same := lies(d, w); in && !same {
				out = append(out, [2]string{w, d})
				break
			}
		}
	}
	return out
}

// Within returns the first of trees that path lies in (resolved as the sandbox
// resolves them), or "".
func Within(path string, trees []string) string {
	for _, t := range trees {
		if in, _ := lies(path, t); in {
			return t
		}
	}
	return ""
}

// lies reports whether path lies in tree, and whether it is tree itself, both resolved
// as the sandbox resolves them.
func lies(path, tree string) (in, same bool) {
	p, err := resolve(path)
	if err != nil {
		return false, false
	}
	t, err := resolve(tree)
	if err != nil {
		return false, false
	}
	return within(p, t), p == t
}

// within reports whether path is dir or lies beneath it.
func within(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

func resolveAll(paths []string) ([]string, error) {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		abs, err := resolve(p)
		if err != nil {
			return nil, err
		}
		out = append(out, abs)
	}
	return out, nil
}

// resolve makes path absolute and follows its symbolic links as far as it exists: a
// path yet to be made keeps the part that does not exist as written.
func resolve(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("sandbox: %s: %w", path, err)
	}
	rest := ""
	for dir := abs; ; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest), nil
		}
		if dir == "/" {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}
