package main

import (
	"fmt"
	"io"
	"strings"
)

// completion prints a completion script for a shell: the commands, and each one's
// flags, as this binary has them.
func completion(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("completion", stdout, stderr)
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "agentmux completion: want a shell: completion bash|zsh|fish")
		return exitUsage
	}
	switch pos[0] {
	case "bash":
		fmt.Fprint(stdout, bashCompletion())
	case "zsh":
		// zsh runs the bash function through its bashcompinit.
		fmt.Fprint(stdout, "#compdef agentmux\nautoload -U +X bashcompinit && bashcompinit\n"+bashCompletion())
	case "fish":
		fmt.Fprint(stdout, fishCompletion())
	default:
		fmt.Fprintf(stderr, "agentmux completion: %q is not a shell this knows: bash, zsh or fish\n", pos[0])
		return exitUsage
	}
	return exitOK
}

// flagsOf are command c's flags as its --help lists them ("-c", "--name").
func flagsOf(c command) []string {
	var help strings.Builder
	c.run([]string{"--help"}, &help, io.Discard)
	var out []string
	for _, line := range strings.Split(help.String(), "\n") {
		if !strings.HasPrefix(line, "  -") {
			continue
		}
		name := strings.TrimPrefix(strings.Fields(line)[0], "-")
		if len(name) == 1 {
			out = append(out, "-"+name)
		} else {
			out = append(out, "--"+name)
		}
	}
	return out
}

func bashCompletion() string {
	var b strings.Builder
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	fmt.Fprintf(&b, `# agentmux completion for bash: source <(agentmux completion bash)
_agentmux() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	if [[ $COMP_CWORD -eq 1 ]]; then
		COMPREPLY=($(compgen -W %q -- "$cur"))
		return
	fi
	case $prev in
	-c) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	esac
	local flags
	case ${COMP_WORDS[1]} in
`, strings.Join(append(names, "help"), " "))
	for _, c := range commands() {
		fmt.Fprintf(&b, "\t%s) flags=%q ;;\n", c.name, strings.Join(flagsOf(c), " "))
	}
	fmt.Fprintf(&b, "\thelp) COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", strings.Join(names, " "))
	b.WriteString(`	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$flags" -- "$cur"))
	fi
}
complete -o default -F _agentmux agentmux
`)
	return b.String()
}

func fishCompletion() string {
	var b strings.Builder
	b.WriteString("# agentmux completion for fish: agentmux completion fish > ~/.config/fish/completions/agentmux.fish\ncomplete -c agentmux -f\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "complete -c agentmux -n __fish_use_subcommand -a %s -d %s\n", c.name, fishQuote(c.summary))
		for _, f := range flagsOf(c) {
			opt := "-l " + strings.TrimPrefix(f, "--")
			if !strings.HasPrefix(f, "--") {
				opt = "-o " + strings.TrimPrefix(f, "-")
			}
			if f == "-c" {
				opt += " -r -F" // a manifest file
			}
			fmt.Fprintf(&b, "complete -c agentmux -n '__fish_seen_subcommand_from %s' %s\n", c.name, opt)
		}
	}
	return b.String()
}

// fishQuote quotes s for fish, in single quotes.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
