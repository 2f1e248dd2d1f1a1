// Package bustest gives tests what a node has of the bus: an embedded NATS server with
// the streams and buckets declared (Open), and an Asker (Asker).
package bustest
