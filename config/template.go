package config

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Template is a stage's prompt: text with ${param}, ${stage} and ${stage.field}
// references, parsed once by Load. "$${" writes a literal "${".
type Template struct {
	parts []templatePart
}

type templatePart struct {
	text string   // literal text, when ref is nil
	ref  []string // name, then the field path into a stage's data
}

// Refs are the names the template refers to, in order, with repeats.
func (t *Template) Refs() []string {
	var out []string
	for _, p := range t.parts {
		if p.ref != nil {
			out = append(out, p.ref[0])
		}
	}
	return out
}

// ParseTemplate splits src into text and references.
func ParseTemplate(src string) (*Template, error) {
	t := &Template{}
	var text strings.Builder
	for rest := src; rest != ""; {
		i := strings.Index(rest, "${")
		if i < 0 {
			text.WriteString(rest)
			break
		}
		if i > 0 && rest[i-1] == '$' { // "$${": a literal "${"
			text.WriteString(rest[:i-1] + "${")
			rest = rest[i+2:]
			continue
		}
		text.WriteString(rest[:i])
		end := strings.IndexByte(rest[i:], '}')
		if end < 0 {
			return nil, fmt.Errorf("%q is not closed with '}'; write $${ for a literal ${", clipText(rest[i:]))
		}
		ref := strings.Split(strings.TrimSpace(rest[i+2:i+end]), ".")
		for _, name := range ref {
			if !namePattern.MatchString(name) {
				return nil, fmt.Errorf("%q is not a reference: use ${param}, ${stage} or ${stage.field}", rest[i:i+end+1])
			}
		}
		if text.Len() > 0 {
			t.parts = append(t.parts, templatePart{text: text.String()})
			text.Reset()
		}
		t.parts = append(t.parts, templatePart{ref: ref})
		rest = rest[i+end+1:]
	}
	if text.Len() > 0 {
		t.parts = append(t.parts, templatePart{text: text.String()})
	}
	return t, nil
}

func clipText(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// StageOutput is what a finished stage offers later prompts: ${stage} is its text,
// ${stage.field} a field of its data.
type StageOutput struct {
	Text string
	Data json.RawMessage
}

// Render fills the template from the run's params and the outputs of its finished
// stages. A field the data lacks is an error that names it.
func (t *Template) Render(params map[string]string, stages map[string]StageOutput) (string, error) {
	var b strings.Builder
	for _, p := range t.parts {
		if p.ref == nil {
			b.WriteString(p.text)
			continue
		}
		name := p.ref[0]
		if v, ok := params[name]; ok && len(p.ref) == 1 {
			b.WriteString(v)
			continue
		}
		out, ok := stages[name]
		if !ok {
			return "", fmt.Errorf("${%s}: no param or finished stage of that name", strings.Join(p.ref, "."))
		}
		if len(p.ref) == 1 {
			if out.Text == "" && len(out.Data) > 0 {
				b.Write(out.Data)
			} else {
				b.WriteString(out.Text)
			}
			continue
		}
		v, err := field(out.Data, p.ref[1:])
		if err != nil {
			return "", fmt.Errorf("${%s}: %w", strings.Join(p.ref, "."), err)
		}
		b.WriteString(v)
	}
	return b.String(), nil
}

// field finds path in the JSON object data: a string as it is, anything else as JSON.
func field(data json.RawMessage, path []string) (string, error) {
	var v any
	if len(data) == 0 || json.Unmarshal(data, &v) != nil {
		return "", fmt.Errorf("the stage's result has no JSON data to take %q from", strings.Join(path, "."))
	}
	for i, key := range path {
		obj, ok := v.(map[string]any)
		if !ok {
			return "", fmt.Errorf("%q is not an object", strings.Join(path[:i], "."))
		}
		if v, ok = obj[key]; !ok {
			return "", fmt.Errorf("the stage's data has no field %q", strings.Join(path[:i+1], "."))
		}
	}
	if s, ok := v.(string); ok {
		return s, nil
	}
	out, _ := json.Marshal(v)
	return string(out), nil
}
