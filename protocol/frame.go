package protocol

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxLineBytes is the line limit when a host sets no max_line_bytes.
const DefaultMaxLineBytes = 1 << 20

// readBufferSize is the bufio buffer each Reader keeps. Lines longer than this are
// gathered in a separate buffer that is released again when it grew large, so an idle
// session costs only this much.
const readBufferSize = 4 << 10

// keepBufferSize is the largest gathering buffer a Reader keeps between lines.
const keepBufferSize = 64 << 10

// LineTooLongError reports a line that exceeded the limit. The line was dropped whole;
// the Reader is positioned at the start of the next line and may be used again.
type LineTooLongError struct {
	Size  int // bytes in the dropped line, without its terminator
	Limit int
	// Head is the line's first bytes (up to HeadBytes): enough to tell what it was,
	// e.g. a result too long to take.
	Head []byte
}

// HeadBytes is how much of a dropped line LineTooLongError keeps.
const HeadBytes = 256

// head copies the first HeadBytes of line.
func head(line []byte) []byte {
	return bytes.Clone(line[:min(len(line), HeadBytes)])
}

func (e *LineTooLongError) Error() string {
	return fmt.Sprintf("protocol: line of %d bytes exceeds the limit of %d bytes; dropped", e.Size, e.Limit)
}

// Reader splits a byte stream into lines of at most a limit, with memory bounded by the
// limit and never by the line.
type Reader struct {
	br    *bufio.Reader
	limit int
	buf   []byte // gathers lines longer than the bufio buffer
}

// NewReader returns a Reader over r that drops lines longer than limit bytes.
// A limit of zero or less means DefaultMaxLineBytes.
func NewReader(r io.Reader, limit int) *Reader {
	return NewReaderSize(r, limit, readBufferSize)
}

// NewReaderSize is NewReader with a read buffer of size bytes (at least 16): a small one
// for streams that are mostly quiet, such as an agent's stderr.
func NewReaderSize(r io.Reader, limit, size int) *Reader {
	if limit <= 0 {
		limit = DefaultMaxLineBytes
	}
	return &Reader{br: bufio.NewReaderSize(r, size), limit: limit}
}

// Next returns the next non-empty line without its "\n" or "\r\n" terminator. The slice
// is only valid until the next call. A line over the limit yields *LineTooLongError and
// the stream stays usable. At the end of the stream Next returns io.EOF; a final line
// without a terminator is returned first.
func (r *Reader) Next() ([]byte, error) {
	r.releaseIfLarge() // the previous line's slice is no longer the caller's
	for {
		line, err := r.line()
		if err != nil {
			return nil, err
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) == 0 {
			continue
		}
		return line, nil
	}
}

// Buffered reports whether a whole non-empty line is already read and waiting: then
// Next returns it without reading the stream.
func (r *Reader) Buffered() bool {
	b, _ := r.br.Peek(r.br.Buffered())
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return false
		}
		if i > 1 || i == 1 && b[0] != '\r' {
			return true
		}
		b = b[i+1:] // an empty line, which Next skips
	}
}

// line reads one line, gathering it across bufio fills when it is long.
func (r *Reader) line() ([]byte, error) {
	frag, err := r.br.ReadSlice('\n')
	if err == nil || (len(frag) > 0 && errors.Is(err, io.EOF)) {
		if err == nil {
			frag = frag[:len(frag)-1]
		}
		return r.limited(frag)
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		return nil, err
	}
	r.buf = append(r.buf[:0], frag...)
	size := len(frag)
	for {
		frag, err = r.br.ReadSlice('\n')
		n := len(frag)
		if err == nil {
			n-- // the terminator
		}
		size += n
		if size <= r.limit+1 { // +1: a trailing '\r' does not count against the limit
			r.buf = append(r.buf, frag[:n]...)
		}
		switch {
		case err == nil || errors.Is(err, io.EOF):
			if size > r.limit+1 {
				return nil, &LineTooLongError{Size: size, Limit: r.limit, Head: head(r.buf)}
			}
			return r.limited(r.buf)
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err
		}
	}
}

func (r *Reader) releaseIfLarge() {
	if cap(r.buf) > keepBufferSize {
		r.buf = nil
	}
}

// limited enforces the limit on a whole line; a trailing '\r' does not count.
func (r *Reader) limited(line []byte) ([]byte, error) {
	n := len(line)
	if n > 0 && line[n-1] == '\r' {
		n--
	}
	if n > r.limit {
		return nil, &LineTooLongError{Size: len(line), Limit: r.limit, Head: head(line)}
	}
	return line, nil
}
