// Command cmd writes a package's codecs (package codecgen) into a file of that package:
//
//	//go:generate go run ../internal/codecgen/cmd -o codec_gen.go -encode Ask,AuditRecord -decode Ask
package main
