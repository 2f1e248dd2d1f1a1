// Package codecgen writes the request path's JSON codecs from the structs' json tags:
// AppendJSON, which appends a record as encoding/json would write it without
// reflection, and field, which reads one key of it. Adding a field to a struct is then
// one edit and `go generate`; wire's test fails while the generated file is stale.
//
//	src, err := codecgen.Generate(codecgen.Options{Dir: "wire", Output: "codec_gen.go", Encode: []string{"Ask"}, Decode: []string{"Ask"}})
package codecgen
