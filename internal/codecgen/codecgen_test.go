package codecgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A struct's fields are written by kind, and what the codecs cannot write is refused
// with what to do.
func TestGenerate(t *testing.T) {
	dir := t.TempDir()
	src := "package p\n\nimport \"encoding/json\"\n\ntype R struct {\n\tA string `json:\"a\"`\n\tB int `json:\"b,omitempty\"`\n\tC json.RawMessage `json:\"c\"`\n\tD []string `json:\"d,omitempty\"`\n\tE *R `json:\"e,omitempty\"`\n\tf string\n\tG string `json:\"-\"`\n}\n\ntype Bad struct {\n\tOn bool `json:\"on\"`\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := Generate(Options{Dir: dir, Output: "gen.go", Encode: []string{"R"}, Decode: []string{"R"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`o.String("a", v.A)`, `o.IntOmit("b", int64(v.B))`, `o.Raw("c", v.C)`, "if len(v.D) > 0 {", "if v.E != nil {",
		`case "b":` + "\n\t\treturn smallInteger(value, &v.B)", `var rKeys = []string{"a", "b", "c", "d", "e"}`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the generated code lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), `"G"`) || strings.Contains(string(out), "v.f") {
		t.Errorf("the generated code writes a field encoding/json leaves out:\n%s", out)
	}
	if _, err := Generate(Options{Dir: dir, Encode: []string{"Bad"}}); err == nil || !strings.Contains(err.Error(), "Object.Bool") {
		t.Errorf("a bool without omitempty: %v", err)
	}
	if _, err := Generate(Options{Dir: dir, Encode: []string{"Missing"}}); err == nil || !strings.Contains(err.Error(), "no struct Missing") {
		t.Errorf("a type that is not there: %v", err)
	}
}
