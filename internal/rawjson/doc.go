// Package rawjson writes and reads the JSON objects of the request path (asks,
// replies, audit records, events) without reflection, many times a second.
//
// Writing: what it writes decodes to what encoding/json's output decodes to: strings
// and numbers as encoding/json writes them, raw JSON as it is (compacted), fields in
// the order they are appended (ExampleObject runs this):
//
//	o := rawjson.Begin(buf[:0])
//	o.String("kind", "answer")
//	o.StringOmit("reason", reason) // left out when empty, as omitempty
//	o.Raw("value", value)          // JSON as it is, compacted; not JSON: a string
//	buf = o.End()
//
// Reading: Fields walks the top-level fields of an object, handing each value over as
// raw bytes, and Unquote reads a string value. A decoder built on them handles the
// plain case and leaves the rest (escaped keys, keys in other letter case, values of
// the wrong type) to encoding/json, so the two always agree.
package rawjson
