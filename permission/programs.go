package permission

import (
	"path/filepath"
	"strings"
)

// A rule names a program, but some programs commonly allowed run another program or
// write a file through their own options: find -exec runs a command, find -fprint and
// sort -o and tee write files. What those options run is judged as a command of the
// line, and what they write as a redirection would be; an option that does what no
// rule can name (find -delete, sort --compress-program) is a reason to ask.

// effects are what a program's options run and write beyond the program itself.
type effects struct {
	runs    [][2]int // the words (from, to) of each command it runs
	writes  []string
	unknown string
}

// programEffects reads the options of words (a command past its wrappers).
func programEffects(words []string) effects {
	switch filepath.Base(words[0]) {
	case "find":
		return findEffects(words)
	case "sort":
		return sortEffects(words[1:])
	case "tee":
		return teeEffects(words[1:])
	case "printf":
		for i, a := range words[1:] {
			if v, ok := strings.CutPrefix(a, "-v"); ok {
				if v == "" && i+2 < len(words) {
					v = words[i+2]
				}
				return effects{unknown: assignWhy("printf -v", []string{v})}
			}
		}
	case "read", "mapfile", "readarray", "getopts":
		return effects{unknown: assignWhy(words[0], words[1:])}
	}
	return effects{}
}

// assignWhy is why a command that sets the variables among names cannot be judged, or
// "": each word that could name a variable must be one localWhy allows.
func assignWhy(command string, names []string) string {
	for _, n := range names {
		if n == "" || strings.HasPrefix(n, "-") {
			continue
		}
		if !validName(n) && strings.ContainsAny(n, "[$`") {
			return command + " sets " + n + ", whose subscript bash evaluates"
		}
		if why := localWhy(n); validName(n) && why != "" {
			return command + ": " + why
		}
	}
	return ""
}

func findEffects(args []string) effects {
	var e effects
	for i := 1; i < len(args); i++ {
		switch args[i] {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(args) && args[j] != ";" && !(args[j] == "+" && args[j-1] == "{}") {
				j++
			}
			if j == i+1 {
				e.unknown = "find " + args[i] + " names no command"
				return e
			}
			e.runs = append(e.runs, [2]int{i + 1, j})
			i = j
		case "-delete":
			e.unknown = "find -delete removes files no rule names"
			return e
		case "-fprint", "-fprint0", "-fls", "-fprintf":
			if i+1 >= len(args) {
				e.unknown = "find " + args[i] + " lacks its file"
				return e
			}
			e.writes = append(e.writes, args[i+1])
			i++
		}
	}
	return e
}

// sortOptions are sort's options (GNU coreutils), read as a wrapper's are: an option
// not here, or one abbreviated, is asked about. -o and --output write their file. -y
// is asked about: it takes the rest of its word ("-yt -o0" writes 0), or the next word
// only when that is a number ("-y -o0" writes 0 too).
var sortOptions = wrapper{
	flags: set("-b", "-c", "-C", "-d", "-f", "-g", "-h", "-i", "-M", "-m", "-n", "-R", "-r", "-s", "-u", "-V", "-z",
		"--ignore-leading-blanks", "--dictionary-order", "--ignore-case", "--general-numeric-sort", "--ignore-nonprinting",
		"--month-sort", "--human-numeric-sort", "--numeric-sort", "--random-sort", "--reverse", "--version-sort", "--check",
		"--debug", "--merge", "--stable", "--unique", "--zero-terminated", "--help", "--version"),
	valued: set("-k", "-o", "-S", "-t", "-T", "--key", "--output", "--buffer-size", "--field-separator",
		"--temporary-directory", "--parallel", "--batch-size", "--sort", "--random-source", "--files0-from"),
	writes: set("-o", "--output"),
	refused: map[string]string{"--compress-program": "runs a program no rule sees",
		"-y": "takes the next word only when it is a number, which is not read here"},
}

func sortEffects(args []string) effects {
	var e effects
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return e // the rest are its files
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue // a file it reads: GNU sort takes options after them too
		}
		n, flag, value, why := sortOptions.option(args[i:])
		switch {
		case why != "":
			return effects{unknown: "sort " + why}
		case sortOptions.writes[flag]:
			e.writes = append(e.writes, value)
		}
		i += n - 1
	}
	return e
}

func teeEffects(args []string) effects {
	var e effects
	options := true
	for _, a := range args {
		switch {
		case options && a == "--":
			options = false
		case options && strings.HasPrefix(a, "-") && a != "-":
		default:
			e.writes = append(e.writes, a)
		}
	}
	return e
}
