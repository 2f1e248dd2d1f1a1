package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentmux/agentmux/internal/codecgen"
)

func main() {
	out := flag.String("o", "codec_gen.go", "the generated `file`, in the current directory")
	encode := flag.String("encode", "", "comma-separated `types` that get AppendJSON")
	decode := flag.String("decode", "", "comma-separated `types` that get field")
	flag.Parse()
	opts := codecgen.Options{Dir: ".", Output: filepath.Base(*out), Encode: list(*encode), Decode: list(*decode)}
	src, err := codecgen.Generate(opts)
	if err == nil {
		err = os.WriteFile(*out, src, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func list(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
