package permission

import (
	"path/filepath"
	"strings"
)

// A wrapper runs the command after its own options and operands. Clear wrappers change
// only how it runs; the others change who runs it (sudo, doas) or with what (xargs adds
// arguments). Every option of a wrapper is modelled: one that is not is a reason to
// ask, since it may run, write or set what no rule sees (env -S, time -o, nice's
// siblings' -p).
type wrapper struct {
	clear bool
	// flags are its options that take no value.
	flags map[string]bool
	// valued are its options that take a value: the next word, or after "=", or the
	// rest of a short option's word (-n10).
	valued map[string]bool
	// writes are its valued options whose value is a file it writes (time -o).
	writes map[string]bool
	// unsets are its valued options whose value is a variable it takes from the
	// command's environment (env -u).
	unsets map[string]bool
	// chdir are its valued options whose value is the folder the command runs in.
	chdir map[string]bool
	// refused are its options that make it do what no rule judges, with why.
	refused map[string]string
	// operands is how many words follow its options before the command (timeout's
	// duration).
	operands int
	// alsoWrites are files it may write whatever its options (nohup.out).
	alsoWrites []string
	// numeric: a "-N" option is its value (nice -10).
	numeric bool
	// assigns: NAME=value words before the command set the command's environment (env).
	assigns bool
}

var wrappers = map[string]wrapper{
	"timeout": {clear: true, flags: set("--preserve-status", "--foreground", "-v", "--verbose"),
		valued: set("-s", "--signal", "-k", "--kill-after"), operands: 1},
	"time": {clear: true, flags: set("-p", "--portability", "-v", "--verbose", "-q", "--quiet", "-a", "--append"),
		valued: set("-f", "--format", "-o", "--output"), writes: set("-o", "--output")},
	"nice":   {clear: true, valued: set("-n", "--adjustment"), numeric: true},
	"nohup":  {clear: true, alsoWrites: []string{"nohup.out", "~/nohup.out"}},
	"stdbuf": {clear: true, valued: set("-i", "-o", "-e", "--input", "--output", "--error")},
	"ionice": {clear: true, flags: set("-t", "--ignore"), valued: set("-c", "--class", "-n", "--classdata"),
		refused: why("changes another process's priority and runs nothing", "-p", "--pid", "-P", "--pgid", "-u", "--uid")},
	"setsid":  {clear: true, flags: set("-c", "--ctty", "-f", "--fork", "-w", "--wait")},
	"command": {clear: true, flags: set("-p", "-v", "-V")},
	"builtin": {clear: true},
	"exec":    {clear: true, flags: set("-c", "-l"), valued: set("-a")},
	"env": {clear: true, flags: set("-0", "--null", "-v", "--debug"),
		valued: set("-u", "--unset", "-C", "--chdir"), unsets: set("-u", "--unset"), chdir: set("-C", "--chdir"), assigns: true,
		refused: map[string]string{"-S": "splits a string into a command no rule sees", "--split-string": "splits a string into a command no rule sees",
			"-": "empties the environment, PATH with it, so the command it finds is another", "-i": "empties the environment, PATH with it, so the command it finds is another",
			"--ignore-environment": "empties the environment, PATH with it, so the command it finds is another"}},
	"sudo": {flags: set("-A", "--askpass", "-b", "--background", "-E", "--preserve-env", "-H", "--set-home", "-n", "--non-interactive",
		"-P", "--preserve-groups", "-S", "--stdin", "-k", "--reset-timestamp", "-K", "--remove-timestamp", "-N", "--no-update"),
		valued: set("-u", "--user", "-g", "--group", "-C", "--close-from", "-h", "--host", "-p", "--prompt", "-U", "--other-user",
			"-r", "--role", "-t", "--type", "-D", "--chdir", "-T", "--command-timeout"), chdir: set("-D", "--chdir"),
		refused: why("runs its command through a shell or an editor, not as written", "-i", "--login", "-s", "--shell", "-e", "--edit")},
	"doas": {flags: set("-n"), valued: set("-u"),
		refused: why("runs a shell or reads another configuration", "-s", "-C", "-L")},
	"xargs": {flags: set("-0", "--null", "-r", "--no-run-if-empty", "-t", "--verbose", "-x", "--exit", "-p", "--interactive", "-o", "--open-tty"),
		valued: set("-n", "--max-args", "-I", "-i", "--replace", "-L", "-l", "--max-lines", "-P", "--max-procs", "-s", "--max-chars",
			"-d", "--delimiter", "-E", "-e", "--eof", "-a", "--arg-file"),
		refused: why("sets a variable in its command's environment", "--process-slot-var")},
}

func set(s ...string) map[string]bool {
	m := map[string]bool{}
	for _, v := range s {
		m[v] = true
	}
	return m
}

func why(reason string, options ...string) map[string]string {
	m := map[string]string{}
	for _, o := range options {
		m[o] = reason
	}
	return m
}

// unwrapped is what a wrapper's words come to.
type unwrapped struct {
	rest   []string // the command it runs, with its arguments
	skip   int      // how many words the wrapper itself took
	clear  bool
	writes []string // files it writes
	env    []string // the variables it sets or takes from the command's environment
	moved  bool     // the command runs in another folder, so its relative paths are not the line's
	// unknown is why it cannot be judged: an option it has that is not modelled, or one
	// that runs or sets what no rule sees.
	unknown string
}

// unwrap reads the wrapper words[0]; ok is false when words[0] is no wrapper.
func unwrap(words []string) (u unwrapped, ok bool) {
	name := filepath.Base(words[0])
	w, found := wrappers[name]
	if !found {
		return u, false
	}
	u.clear = w.clear
	u.writes = append(u.writes, w.alsoWrites...)
	i := 1
	for i < len(words) {
		a := words[i]
		if a == "--" {
			i++
			break
		}
		if w.assigns && isAssignment(a) {
			u.env = append(u.env, a[:strings.IndexByte(a, '=')])
			i++
			continue
		}
		if a == "-" && w.refused["-"] != "" {
			u.unknown = name + " - " + w.refused["-"]
			return u, true
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		n, flag, value, why := w.option(words[i:])
		switch {
		case why != "":
			u.unknown = name + " " + why
			return u, true
		case w.writes[flag]:
			u.writes = append(u.writes, value)
		case w.unsets[flag]:
			u.env = append(u.env, value)
		case w.chdir[flag]:
			u.moved = true
		}
		i += n
	}
	i += w.operands
	if i > len(words) {
		i = len(words)
	}
	u.rest, u.skip = words[i:], i
	return u, true
}

// option reads the option that starts words: how many words it takes, the option and
// its value if it takes one, or why it cannot be judged.
func (w wrapper) option(words []string) (n int, flag, value, why string) {
	a := words[0]
	valued := func(flag string, attached string, hasAttached bool) (int, string, string, string) {
		if !hasAttached {
			if len(words) < 2 {
				return 0, flag, "", flag + " lacks its value"
			}
			return 2, flag, words[1], ""
		}
		return 1, flag, attached, ""
	}
	if strings.HasPrefix(a, "--") {
		flag, v, has := strings.Cut(a, "=")
		switch {
		case w.refused[flag] != "":
			return 0, flag, "", flag + " " + w.refused[flag]
		case w.valued[flag]:
			return valued(flag, v, has)
		case w.flags[flag] && !has:
			return 1, flag, "", ""
		}
		return 0, flag, "", "has the option " + flag + ", which is not modelled"
	}
	if w.numeric && isDigits(a[1:]) {
		return 1, a, "", ""
	}
	// A group of short options: flags, then at most one valued option taking the rest.
	for j := 1; j < len(a); j++ {
		flag := "-" + a[j:j+1]
		switch {
		case w.refused[flag] != "":
			return 0, flag, "", flag + " " + w.refused[flag]
		case w.valued[flag]:
			return valued(flag, a[j+1:], j+1 < len(a))
		case !w.flags[flag]:
			return 0, flag, "", "has the option " + flag + ", which is not modelled"
		}
	}
	return 1, a, "", ""
}

// isAssignment reports whether word is NAME=value.
func isAssignment(word string) bool {
	name, _, ok := strings.Cut(word, "=")
	return ok && validName(name)
}

func validName(name string) bool {
	if name == "" || (name[0] >= '0' && name[0] <= '9') {
		return false
	}
	for _, c := range name {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
