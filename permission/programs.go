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

func sortEffects(args []string) effects {
	var e effects
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return e
		case a == "--output" || a == "-o":
			if i+1 >= len(args) {
				return effects{unknown: "sort " + a + " lacks its file"}
			}
			e.writes = append(e.writes, args[i+1])
			i++
		case strings.HasPrefix(a, "--output="):
			e.writes = append(e.writes, strings.TrimPrefix(a, "--output="))
		case strings.HasPrefix(a, "--compress-program"):
			return effects{unknown: "sort --compress-program runs a program no rule sees"}
		case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--"):
			// Short options: -o's file is the rest of the word or the next; -k, -t, -S and
			// -T take theirs the same way.
			for j := 1; j < len(a); j++ {
				if c := a[j]; c == 'o' {
					if j+1 < len(a) {
						e.writes = append(e.writes, a[j+1:])
					} else if i+1 < len(args) {
						e.writes = append(e.writes, args[i+1])
						i++
					}
					break
				} else if strings.IndexByte("ktST", c) >= 0 {
					if j+1 == len(a) {
						i++
					}
					break
				}
			}
		}
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
