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
// string given to sh -c or eval, behind a wrapper (sudo b, timeout 5 b, xargs b) or
// through a program's own option (find -exec b). It can also write a file (> ~/.bashrc,
// time -o f, sort -o f), or change what a named command is (PATH=…, LD_PRELOAD=…). So a
// line is parsed as bash parses it, and every command and every file it writes is what
// the rules judge: a deny or ask rule on any of them decides the whole line; an allow
// needs every command allowed and every file written allowed by an Edit rule.
//
// The reading fails closed. A part of the line it does not model — a command name,
// redirection target or wrapper option that is not plain text, a wrapper's option it
// does not know, a variable that may change what runs (variables.go), arithmetic on a
// variable's value (which bash evaluates as an expression, and an expression can run a
// command), indirection and the expansions that assign or re-evaluate — is a reason to
// ask, never to allow.

// maxNesting bounds how deep sh -c and eval strings are parsed.
const maxNesting = 8

// shellLine is what one line runs.
type shellLine struct {
	commands []shellCommand
	writes   []string // files written by redirections and options, as written (~ not expanded)
	reads    []string // files read by redirections
	unknown  []string // why a part of the line cannot be known, for the ask
	cd       bool     // it changes its working folder, so a relative path is not the one it reads
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
	if strings.IndexByte(line, 0) >= 0 {
		l.unknown = append(l.unknown, "it holds a NUL byte, which no shell is given as written")
	}
	if err := l.add(line, 0); err != nil {
		return nil, err
	}
	for _, w := range l.writes {
		// A program's option or operand that names a file is taken as written: one the
		// shell expands (build/$(echo ../x), bu*) is not the file it writes.
		if glob(w) || strings.ContainsAny(w, "$`") {
			l.unknown = append(l.unknown, "it writes "+w+", a path the shell expands first")
			break
		}
	}
	if l.cd {
		for _, w := range l.writes {
			if !filepath.IsAbs(w) && !strings.HasPrefix(w, "~") {
				l.unknown = append(l.unknown, "it changes its folder and then writes "+w+", a path relative to where it went")
				break
			}
		}
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
		default:
			l.expansion(src, n)
		}
		return true
	})
	return failed
}

// call records one simple command, and parses what sh -c or eval would run.
func (l *shellLine) call(src string, c *syntax.CallExpr, depth int) error {
	for _, a := range c.Assigns {
		if a.Name == nil {
			continue
		}
		why := localWhy(a.Name.Value)
		if len(c.Args) > 0 {
			why = exportWhy(a.Name.Value) // NAME=value cmd: in the command's environment
		}
		if why != "" {
			l.unknown = append(l.unknown, why)
		}
	}
	if len(c.Args) == 0 {
		return nil // assignments alone
	}
	words := make([]string, len(c.Args))
	plain := make([]bool, len(c.Args))
	for i, w := range c.Args {
		words[i], plain[i] = word(src, w)
	}
	return l.command(words, plain, depth)
}

// command records the command words (plain[i]: words[i] is literal text), what it runs
// past its wrappers and through its options, and what those write.
func (l *shellLine) command(words []string, plain []bool, depth int) error {
	cmd := shellCommand{text: strings.Join(words, " ")}
	rest, at, transparent := words, 0, true
	for plain[at] {
		u, ok := unwrap(rest)
		if !ok {
			break
		}
		for _, p := range plain[at : at+u.skip] {
			if !p {
				l.unknown = append(l.unknown, "a word of "+rest[0]+"'s options is not plain text")
				break
			}
		}
		if u.unknown != "" {
			l.unknown = append(l.unknown, u.unknown)
		}
		for _, name := range u.env {
			if why := exportWhy(name); why != "" {
				l.unknown = append(l.unknown, why)
			}
		}
		l.writes = append(l.writes, u.writes...)
		l.cd = l.cd || u.moved
		if len(u.rest) == 0 {
			break
		}
		rest, at = u.rest, at+u.skip
		text := strings.Join(rest, " ")
		cmd.inner = append(cmd.inner, text)
		if transparent = transparent && u.clear; transparent {
			cmd.allowable = append(cmd.allowable, text)
		}
	}
	if !plain[at] {
		l.unknown = append(l.unknown, fmt.Sprintf("the command %s is not plain text", rest[0]))
	}
	cmd.allowable = append([]string{cmd.text}, cmd.allowable...)
	l.commands = append(l.commands, cmd)
	self := &l.commands[len(l.commands)-1]

	name := filepath.Base(rest[0])
	if name == "cd" || name == "pushd" || name == "popd" {
		l.cd = true
	}
	e := programEffects(rest)
	if e.unknown != "" {
		l.unknown = append(l.unknown, e.unknown)
	}
	l.writes = append(l.writes, e.writes...)
	for _, r := range e.runs {
		if err := l.command(rest[r[0]:r[1]], plain[at+r[0]:at+r[1]], depth+1); err != nil {
			return err
		}
	}
	// What a shell or eval would run is parsed like the line.
	switch {
	case shells[name]:
		for j := at + 1; j < len(words); j++ {
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
		for _, p := range plain[at+1:] {
			if !p {
				l.unknown = append(l.unknown, "eval runs text that is not plain")
				return nil
			}
		}
		self.script = transparent
		return l.add(strings.Join(words[at+1:], " "), depth+1)
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
// (a variable, a command, arithmetic, a pattern of file names), its source and false.
func word(src string, w *syntax.Word) (string, bool) {
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if glob(p.Value) {
				return source(src, w), false
			}
		case *syntax.SglQuoted:
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

// glob reports whether unquoted text would be a pattern of file names to bash.
func glob(text string) bool {
	if strings.ContainsAny(text, "*?") {
		return true
	}
	open := strings.IndexByte(text, '[')
	return open >= 0 && strings.IndexByte(text[open+1:], ']') >= 0
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// shells are the commands that run a script given with -c.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true}
