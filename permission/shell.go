package permission

import (
	"fmt"
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// A Bash rule names commands, but an agent sends a shell line, and a line can run a
// command where a naive reading sees none: after an operator (a && b), inside a command
// substitution ($(b), `b`), a process substitution (<(b)), a subshell or group, a
// string given to sh -c or eval, or behind a wrapper (sudo b, timeout 5 b, xargs b). It
// can also write a file (> ~/.bashrc). So a line is parsed as bash parses it, and every
// command and every redirection in it is what the rules judge: a deny or ask rule on
// any of them decides the whole line; an allow needs every command allowed and every
// file written allowed by an Edit rule; and a line, a command name or a redirection
// target that is not plain text is asked about, never allowed.

// maxNesting bounds how deep sh -c and eval strings are parsed.
const maxNesting = 8

// shellLine is what one line runs.
type shellLine struct {
	commands []shellCommand
	writes   []string // files written by redirections, as written (~ not expanded)
	reads    []string // files read by redirections
	unknown  []string // why a part of the line cannot be known, for the ask
}

// shellCommand is one simple command: its text as run, and what it runs past each of
// its wrappers ("sudo timeout 5 rm x" runs "timeout 5 rm x" and "rm x").
type shellCommand struct {
	text  string
	inner []string
	// allowable are the texts an allow rule may match: the command, and what runs past
	// each wrapper that changes nothing but how it runs (timeout, nice, nohup, …); not
	// past sudo or xargs, which change who runs it or with what.
	allowable []string
	// script: it is sh -c or eval of a plain script, and behind clear wrappers only:
	// the script's own commands are what an allow must cover.
	script bool
}

// parseShell reads line as bash would.
func parseShell(line string) (*shellLine, error) {
	l := &shellLine{}
	if err := l.add(line, 0); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *shellLine) add(src string, depth int) error {
	if depth > maxNesting {
		l.unknown = append(l.unknown, "sh -c or eval nested more than 8 deep")
		return nil
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		return err
	}
	var failed error
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CallExpr:
			if err := l.call(src, n, depth); err != nil && failed == nil {
				failed = err
			}
		case *syntax.Redirect:
			l.redirect(src, n)
		case *syntax.FuncDecl:
			name := "an unnamed one"
			if n.Name != nil {
				name = n.Name.Value
			}
			l.unknown = append(l.unknown, "it declares a function ("+name+"), whose body runs under a name no rule knows")
		}
		return true
	})
	return failed
}

// call records one simple command, and parses what sh -c or eval would run.
func (l *shellLine) call(src string, c *syntax.CallExpr, depth int) error {
	if len(c.Args) == 0 {
		return nil // assignments alone
	}
	words := make([]string, len(c.Args))
	plain := make([]bool, len(c.Args))
	for i, w := range c.Args {
		words[i], plain[i] = word(src, w)
	}
	if !plain[0] {
		l.unknown = append(l.unknown, fmt.Sprintf("the command %s is not plain text", words[0]))
	}
	cmd := shellCommand{text: strings.Join(words, " ")}
	rest, transparent := words, true
	for {
		next, clear, ok := unwrap(rest)
		if !ok || len(next) == 0 {
			break
		}
		rest = next
		text := strings.Join(rest, " ")
		cmd.inner = append(cmd.inner, text)
		if transparent = transparent && clear; transparent {
			cmd.allowable = append(cmd.allowable, text)
		}
	}
	cmd.allowable = append([]string{cmd.text}, cmd.allowable...)
	l.commands = append(l.commands, cmd)
	self := &l.commands[len(l.commands)-1]
	// What a shell or eval would run is parsed like the line.
	i := len(words) - len(rest)
	switch name := filepath.Base(rest[0]); {
	case shells[name]:
		for j := i + 1; j < len(words); j++ {
			if words[j] == "-c" || (strings.HasPrefix(words[j], "-") && strings.HasSuffix(words[j], "c") && !strings.HasPrefix(words[j], "--")) {
				if j+1 >= len(words) || !plain[j+1] {
					l.unknown = append(l.unknown, name+" -c runs a script that is not plain text")
					return nil
				}
				self.script = transparent
				return l.add(words[j+1], depth+1)
			}
		}
		l.unknown = append(l.unknown, name+" runs a script from a file or its input, which no rule sees")
	case name == "eval":
		for _, p := range plain[i+1:] {
			if !p {
				l.unknown = append(l.unknown, "eval runs text that is not plain")
				return nil
			}
		}
		self.script = transparent
		return l.add(strings.Join(words[i+1:], " "), depth+1)
	}
	return nil
}

// redirect records a file a redirection reads or writes.
func (l *shellLine) redirect(src string, r *syntax.Redirect) {
	var into *[]string
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.AppAll,
		syntax.RdrAllClob, syntax.AppAllClob, syntax.RdrInOut:
		into = &l.writes
	case syntax.RdrIn:
		into = &l.reads
	case syntax.DplOut, syntax.DplIn:
		if target, plain := word(src, r.Word); plain && (target == "-" || isDigits(target)) {
			return // >&2, <&0, >&-: a descriptor, not a file
		}
		into = &l.writes
	default:
		return // here-documents and here-strings: text, no file
	}
	target, plain := word(src, r.Word)
	if !plain {
		l.unknown = append(l.unknown, fmt.Sprintf("a redirection to %s, which is not plain text", target))
		return
	}
	*into = append(*into, target)
}

// word is w's text after bash's quote removal, and true; or, when it expands something
// (a variable, a command, arithmetic), its source and false.
func word(src string, w *syntax.Word) (string, bool) {
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit, *syntax.SglQuoted:
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					return source(src, w), false
				}
			}
		default:
			return source(src, w), false
		}
	}
	fields, err := expand.Fields(nil, w)
	if err != nil || len(fields) != 1 {
		return source(src, w), false
	}
	return fields[0], true
}

func source(src string, n syntax.Node) string {
	start, end := int(n.Pos().Offset()), int(n.End().Offset())
	if start < 0 || end > len(src) || start > end {
		return "?"
	}
	return src[start:end]
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// shells are the commands that run a script given with -c.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true}

// A wrapper runs the command after its own options and operands. clear wrappers change
// only how it runs; the others change who runs it (sudo, doas) or with what (xargs
// adds arguments).
type wrapper struct {
	clear bool
	// valued are its options that take the next word as their value.
	valued map[string]bool
	// operands is how many words follow its options before the command (timeout's
	// duration).
	operands int
}

var wrappers = map[string]wrapper{
	"timeout": {clear: true, valued: set("-s", "--signal", "-k", "--kill-after"), operands: 1},
	"time":    {clear: true, valued: set("-f", "--format", "-o", "--output")},
	"nice":    {clear: true, valued: set("-n", "--adjustment")},
	"nohup":   {clear: true},
	"stdbuf":  {clear: true, valued: set("-i", "-o", "-e", "--input", "--output", "--error")},
	"ionice":  {clear: true, valued: set("-c", "-n", "-p", "-P", "-u", "--class", "--classdata")},
	"command": {clear: true},
	"builtin": {clear: true},
	"exec":    {clear: true, valued: set("-a")},
	"env":     {clear: true, valued: set("-u", "--unset", "-C", "--chdir", "-S", "--split-string")},
	"sudo":    {valued: set("-u", "--user", "-g", "--group", "-C", "--close-from", "-h", "--host", "-p", "--prompt", "-U", "--other-user", "-r", "--role", "-t", "--type", "-D", "--chdir", "-T", "--command-timeout")},
	"doas":    {valued: set("-u", "-C")},
	"xargs": {valued: set("-n", "--max-args", "-I", "-i", "--replace", "-L", "--max-lines", "-P", "--max-procs", "-s", "--max-chars",
		"-d", "--delimiter", "-E", "-e", "--eof", "-a", "--arg-file")},
}

func set(s ...string) map[string]bool {
	m := map[string]bool{}
	for _, v := range s {
		m[v] = true
	}
	return m
}

// unwrap returns what the wrapper words[0] runs, and whether it is a clear one; ok is
// false when words[0] is no wrapper.
func unwrap(words []string) (rest []string, clear, ok bool) {
	w, found := wrappers[filepath.Base(words[0])]
	if !found {
		return nil, false, false
	}
	name := filepath.Base(words[0])
	i := 1
	for i < len(words) {
		a := words[i]
		switch {
		case a == "--":
			i++
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if flag, _, hasValue := strings.Cut(a, "="); !hasValue && w.valued[flag] {
				i++ // its value
			}
			i++
			continue
		case name == "env" && strings.Contains(a, "="):
			i++ // NAME=value
			continue
		}
		break
	}
	i += w.operands
	if i > len(words) {
		i = len(words)
	}
	return words[i:], w.clear, true
}
