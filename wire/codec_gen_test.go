package wire

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/internal/codecgen"
)

// The generated codecs are what the structs' tags make now, by codec.go's go:generate
// line: a field added without `go generate ./wire` fails here.
func TestCodecsAreGenerated(t *testing.T) {
	src, err := os.ReadFile("codec.go")
	if err != nil {
		t.Fatal(err)
	}
	opts := codecgen.Options{Dir: "."}
	for _, line := range strings.Split(string(src), "\n") {
		args, ok := strings.CutPrefix(line, "//go:generate go run ../internal/codecgen/cmd ")
		if !ok {
			continue
		}
		words := strings.Fields(args)
		for i := 0; i+1 < len(words); i += 2 {
			switch words[i] {
			case "-o":
				opts.Output = words[i+1]
			case "-encode":
				opts.Encode = strings.Split(words[i+1], ",")
			case "-decode":
				opts.Decode = strings.Split(words[i+1], ",")
			}
		}
	}
	if opts.Output == "" || len(opts.Encode) == 0 {
		t.Fatal("codec.go has no go:generate line for internal/codecgen")
	}
	want, err := codecgen.Generate(opts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(opts.Output)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("wire/%s is not what the structs' tags make now: run go generate ./wire", opts.Output)
	}
}
