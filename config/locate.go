package config

import (
	"strconv"
	"strings"
)

// locator finds where a key path is written in the TOML source, for messages. The TOML
// library reports positions only for syntax and type errors, so this scans the text: it
// follows table headers ([a.b], [[a]]) and then looks for "key =" after them. It is a
// best effort; a key it cannot find is reported at its table, or without a position.
type locator struct {
	lines   []string
	headers map[string]int // table headers by key path ([[array]] index included): their line
	arrays  map[string]int // [[name]] headers by name: how many
}

func newLocator(src []byte) *locator {
	l := &locator{lines: strings.Split(string(src), "\n"), headers: map[string]int{}, arrays: map[string]int{}}
	for i, raw := range l.lines {
		s := strings.TrimSpace(raw)
		if !strings.HasPrefix(s, "[") {
			continue
		}
		parts := splitKey(strings.Trim(strings.SplitN(s, "]", 2)[0], "[ "))
		if strings.HasPrefix(s, "[[") {
			name := strings.Join(parts, ".")
			parts = append(parts, strconv.Itoa(l.arrays[name]))
			l.arrays[name]++
		}
		if k := pathKey(parts); l.headers[k] == 0 {
			l.headers[k] = i + 1
		}
	}
	return l
}

// pathKey is a key path as a map key, [agents.X] being [hosts.X].
func pathKey(path []string) string {
	if len(path) > 0 && path[0] == "agents" {
		path = append([]string{"hosts"}, path[1:]...)
	}
	return strings.Join(path, "\x00")
}

// find returns the 1-based line and column of path, e.g. ["hosts","w","timeout"] or
// ["routes","2","match"]; 0, 0 when not found.
func (l *locator) find(path []string) (line, col int) {
	line, col, _ = l.locate(path)
	return line, col
}

// arrayPaths puts back the index the TOML library leaves out of keys inside arrays of
// tables ([[nats.users]] bogus = 1 comes as nats.users.bogus): one path per table of the
// array that holds the key, or key itself when no array does.
func (l *locator) arrayPaths(key []string) [][]string {
	for i := len(key) - 1; i >= 1; i-- {
		n := l.arrays[strings.Join(key[:i], ".")]
		var out [][]string
		for j := range n {
			p := append(append(append([]string{}, key[:i]...), strconv.Itoa(j)), key[i:]...)
			if _, _, ok := l.locate(p); ok {
				out = append(out, p)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return [][]string{key}
}

// locate is find, and whether path itself was found (not only its table).
func (l *locator) locate(path []string) (line, col int, ok bool) {
	// The longest table header that is a prefix of path.
	bestLine, bestLen := -1, 0
	for n := len(path); n >= 1; n-- {
		if at := l.headers[pathKey(path[:n])]; at > 0 {
			bestLine, bestLen = at-1, n
			break
		}
	}
	// Then each remaining key in order, inline tables included.
	pos := 0
	if bestLine >= 0 {
		if bestLen == len(path) {
			return bestLine + 1, strings.Index(l.lines[bestLine], "[") + 1, true
		}
		pos = bestLine + 1
		line, col = bestLine+1, 1
	}
	for _, key := range path[bestLen:] {
		if _, err := strconv.Atoi(key); err == nil {
			continue // an index into an inline array: stay at the array's key
		}
		found := false
		for i := pos; i < len(l.lines); i++ {
			if i > pos && isHeader(l.lines[i]) {
				break // the next table: not in this one
			}
			if c := keyColumn(l.lines[i], key); c > 0 {
				line, col, pos, found = i+1, c, i, true
				break
			}
		}
		if !found {
			return line, col, false
		}
	}
	return line, col, true
}

// keyColumn returns the 1-based column of key used as "key =" or "key.x =" in s, or 0.
func keyColumn(s, key string) int {
	if key == "" {
		key = `""` // the empty key can only be written quoted
	}
	for from := 0; from < len(s); {
		i := strings.Index(s[from:], key)
		if i < 0 {
			return 0
		}
		i += from
		from = i + len(key)
		if i > 0 && (isKeyChar(s[i-1]) || s[i-1] == '"') {
			continue
		}
		rest := strings.TrimLeft(s[i+len(key):], " \t")
		if strings.HasPrefix(rest, "\"") {
			rest = strings.TrimLeft(rest[1:], " \t")
		}
		if strings.HasPrefix(rest, "=") || strings.HasPrefix(rest, ".") {
			if i > 0 && s[i-1] == '"' {
				return i
			}
			return i + 1
		}
	}
	return 0
}

// isHeader reports whether s is a table header line: [a.b], [[a]] or ["a b"].
func isHeader(s string) bool {
	t := strings.TrimSpace(s)
	return len(t) > 1 && t[0] == '[' && (t[1] == '[' || t[1] == '"' || isKeyChar(t[1]))
}

func isKeyChar(c byte) bool {
	return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func splitKey(name string) []string {
	parts := strings.Split(name, ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
	}
	return parts
}
