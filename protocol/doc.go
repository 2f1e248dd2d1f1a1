// Package protocol implements the agent wire protocol of agentmux: NDJSON framing with a
// line limit, canonical messages, answer encoding and typed-request validation.
//
// It is the contract between the runtime and an agent process that speaks the native
// protocol (dialect "ndjson"). Vendor dialects translate their own protocols into the same
// canonical Message values. The package does no I/O of its own beyond reading from the
// io.Reader it is given, imports nothing of agentmux but internal/rawjson (its JSON
// reader and writer), and is safe to use from any goroutine as long as one Reader is
// used by one goroutine at a time.
//
// A typical read loop (ExampleReader runs it):
//
//	r := protocol.NewReader(stdout, protocol.DefaultMaxLineBytes)
//	for {
//		line, err := r.Next()
//		var tooLong *protocol.LineTooLongError
//		switch {
//		case errors.As(err, &tooLong):
//			continue // counted and reported; the session goes on
//		case err != nil:
//			return err // io.EOF when the agent closed stdout
//		}
//		msg, err := protocol.Decode(line, protocol.PlainTextResult)
//		...
//	}
package protocol
