// Package pipe provides an in-memory pipe that buffers as the kernel's does: a write
// returns once its bytes are in the buffer and waits only while the buffer is full,
// where io.Pipe hands every write to a reader and waits for it. An in-process agent
// runs on two of them, so it is written to and read from as a process on real pipes
// is, without a file descriptor.
//
// TryWrite writes what fits without waiting, for a caller that must never block;
// Write waits for room, up to the deadline SetWriteDeadline sets.
//
//	r, w := pipe.New(pipe.Size)
//	n, err := w.TryWrite(line) // n < len(line): the buffer is full, or a Write is waiting
package pipe
