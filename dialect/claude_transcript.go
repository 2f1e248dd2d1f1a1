package dialect

import (
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf16"
)

// Conversation is Claude Code's session id, from its system/init line.
func (c *claude) Conversation() string { return c.conversation }

// Transcript is where Claude Code keeps conversation id: under its config dir
// (CLAUDE_CONFIG_DIR, or ~/.claude), in projects/<dir, every character but a letter or
// digit a '-'>/<id>.jsonl, a name longer than 200 cut there and told apart by a hash.
func (c *claude) Transcript(env []string, dir, id string) string {
	return claudeTranscript(env, dir, id)
}

func claudeTranscript(env []string, dir, id string) string {
	return filepath.Join(claudeConfigDir(env), "projects", claudeProject(dir), id+".jsonl")
}

func claudeConfigDir(env []string) string {
	if d, ok := lookup(env, "CLAUDE_CONFIG_DIR"); ok {
		return d
	}
	home, _ := lookup(env, "HOME")
	return filepath.Join(home, ".claude")
}

// claudeProject names the folder of a working directory's conversations as Claude Code
// does: it reads dir as UTF-16 code units, as JavaScript does.
func claudeProject(dir string) string {
	units := utf16.Encode([]rune(dir))
	var b strings.Builder
	var hash int32 // Java's String.hashCode
	for _, u := range units {
		if u < 0x80 && (u >= 'a' && u <= 'z' || u >= 'A' && u <= 'Z' || u >= '0' && u <= '9') {
			b.WriteByte(byte(u))
		} else {
			b.WriteByte('-')
		}
		hash = hash*31 + int32(u)
	}
	name := b.String()
	const most = 200
	if len(name) <= most {
		return name
	}
	h := int64(hash)
	if h < 0 {
		h = -h
	}
	return name[:most] + "-" + strconv.FormatInt(h, 36)
}

// lookup is env's last value of name, as exec.Cmd takes it.
func lookup(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v, true
		}
	}
	return "", false
}
