package hook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentmux/agentmux/config"
)

// ClaudeHook is the hook `agentmux hook install claude-code` writes for each event: an
// http hook posting to URL with the token from TokenEnv, or a command hook running
// Command; Timeout in seconds, long enough for a person to answer.
type ClaudeHook struct {
	URL      string
	TokenEnv string
	Command  string
	Timeout  int
}

// CodexHook is the hook `agentmux hook install codex` writes for each event: Codex has
// only command hooks, so it runs Command (`agentmux hook codex`); Timeout in seconds.
type CodexHook struct {
	Command string
	Timeout int
}

// oursFor is whether a hook entry is one agentmux wrote for dialect: an http hook to
// the console's endpoint, or the `agentmux hook <dialect>` command.
func oursFor(dialect string) func(map[string]any) bool {
	return func(entry map[string]any) bool {
		url, _ := entry["url"].(string)
		cmd, _ := entry["command"].(string)
		return strings.Contains(url, "/v1/hooks/"+dialect) || strings.Contains(cmd, "hook "+dialect)
	}
}

func (h ClaudeHook) entry() map[string]any {
	if h.Command != "" {
		return map[string]any{"type": "command", "command": h.Command, "timeout": h.Timeout}
	}
	e := map[string]any{"type": "http", "url": h.URL, "timeout": h.Timeout}
	if h.TokenEnv != "" {
		e["headers"] = map[string]string{"Authorization": "Bearer $" + h.TokenEnv}
		e["allowedEnvVars"] = []string{h.TokenEnv}
	}
	return e
}

// InstallClaude returns settings (a Claude Code settings file, or nothing) with h as
// the hook of each of events, in place of any agentmux hook there was: every other key,
// event and hook stays as it was, in its order.
func InstallClaude(settings []byte, events []string, h ClaudeHook) ([]byte, error) {
	return install(settings, events, h.entry(), "*", oursFor(config.AttachedClaudeCode))
}

// InstallCodex is InstallClaude for a Codex hooks.json: the same shape, no matcher (all
// tools), command hooks only.
func InstallCodex(hooksFile []byte, events []string, h CodexHook) ([]byte, error) {
	entry := map[string]any{"type": "command", "command": h.Command, "timeout": h.Timeout}
	return install(hooksFile, events, entry, "", oursFor(config.AttachedCodex))
}

// install writes entry as the hook of each of events into settings, under matcher (none
// when empty; SessionEnd never has one), in place of the hooks ours picks out.
func install(settings []byte, events []string, entry map[string]any, matcher string, ours func(map[string]any) bool) ([]byte, error) {
	if len(bytes.TrimSpace(settings)) == 0 {
		settings = []byte("{}")
	}
	top, err := decodeObject(settings)
	if err != nil {
		return nil, fmt.Errorf("hook: the settings file: %w", err)
	}
	hooks := &object{}
	if raw, ok := top.get("hooks"); ok {
		if hooks, err = decodeObject(raw); err != nil {
			return nil, fmt.Errorf(`hook: the settings file's "hooks": %w`, err)
		}
	}
	for _, event := range events {
		var groups []map[string]any
		if raw, ok := hooks.get(event); ok {
			if err := json.Unmarshal(raw, &groups); err != nil {
				return nil, fmt.Errorf("hook: the settings file's hooks.%s is not a list of matchers: %w", event, err)
			}
		}
		kept := groups[:0]
		for _, g := range groups {
			list, _ := g["hooks"].([]any)
			var rest []any
			for _, e := range list {
				if m, ok := e.(map[string]any); !ok || !ours(m) {
					rest = append(rest, e)
				}
			}
			if len(rest) > 0 {
				g["hooks"] = rest
				kept = append(kept, g)
			}
		}
		group := map[string]any{"hooks": []any{entry}}
		if event != SessionEnd && matcher != "" {
			group["matcher"] = matcher
		}
		raw, err := json.Marshal(append(kept, group))
		if err != nil {
			return nil, err
		}
		hooks.set(event, raw)
	}
	raw, err := hooks.encode()
	if err != nil {
		return nil, err
	}
	top.set("hooks", raw)
	out, err := top.encode()
	if err != nil {
		return nil, err
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, out, "", "  "); err != nil {
		return nil, err
	}
	indented.WriteByte('\n')
	return indented.Bytes(), nil
}

// object is a JSON object whose keys keep their order.
type object struct {
	keys   []string
	values map[string]json.RawMessage
}

func decodeObject(data []byte) (*object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object")
	}
	o := &object{values: map[string]json.RawMessage{}}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		o.set(key, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return o, nil
}

func (o *object) get(key string) (json.RawMessage, bool) {
	v, ok := o.values[key]
	return v, ok
}

func (o *object) set(key string, v json.RawMessage) {
	if o.values == nil {
		o.values = map[string]json.RawMessage{}
	}
	if _, ok := o.values[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.values[key] = v
}

func (o *object) encode() (json.RawMessage, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(k)
		b.Write(key)
		b.WriteByte(':')
		b.Write(o.values[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
