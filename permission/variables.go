package permission

// A variable can change what a line runs without a word of the command changing: PATH
// picks another program, LD_PRELOAD loads code into it, BASH_ENV runs a script before a
// shell's, GIT_SSH_COMMAND, NODE_OPTIONS and npm_config_script_shell run programs of
// their own, HOME and TMPDIR move where it writes, IFS re-splits the line. So a line
// that sets one is asked about unless it is known to change none of that: a variable
// given to a command (NAME=value cmd, env NAME=value, export NAME) is one of harmlessEnv;
// one the shell keeps to itself (NAME=value alone, for NAME in) is either of those or a
// script's own lower-case word without an underscore, a name no program or shell reads
// (npm_config_*, http_proxy have one).

// harmlessEnv are the variables known to change only what a program prints or how fast:
// never which program runs, what it loads, or where it writes.
var harmlessEnv = set("CI", "NODE_ENV", "DEBUG", "FORCE_COLOR", "NO_COLOR", "CLICOLOR", "TERM", "TZ",
	"LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "LC_COLLATE", "LC_NUMERIC", "LC_TIME",
	"COLUMNS", "LINES", "RUST_LOG", "RUST_BACKTRACE", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED",
	"GOOS", "GOARCH", "CGO_ENABLED", "GOMAXPROCS", "GOTRACEBACK", "VERBOSE", "LOG_LEVEL", "NODE_NO_WARNINGS")

// exportWhy is why giving name to a command cannot be judged, or "" when it can.
func exportWhy(name string) string {
	if harmlessEnv[name] {
		return ""
	}
	return "it sets " + name + " for a command, which can change what it runs or writes"
}

// localWhy is why setting name in the line's own shell cannot be judged, or "".
func localWhy(name string) string {
	if harmlessEnv[name] || scriptName(name) {
		return ""
	}
	return "it sets " + name + ", which can change what the line runs or writes"
}

// scriptName reports whether name is a script's own: lower case letters and digits.
func scriptName(name string) bool {
	if name == "" || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
