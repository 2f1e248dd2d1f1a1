package protocol

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func readAll(t *testing.T, r *Reader) (lines []string, tooLong []int) {
	t.Helper()
	for {
		line, err := r.Next()
		var tl *LineTooLongError
		switch {
		case errors.As(err, &tl):
			tooLong = append(tooLong, tl.Size)
			continue
		case errors.Is(err, io.EOF):
			return lines, tooLong
		case err != nil:
			t.Fatalf("Next: %v", err)
		}
		lines = append(lines, string(line))
	}
}

func TestReaderSplitsLines(t *testing.T) {
	in := "a\r\n\n\nbb\n  \nccc"
	lines, tooLong := readAll(t, NewReader(strings.NewReader(in), 10))
	want := []string{"a", "bb", "  ", "ccc"}
	if strings.Join(lines, "|") != strings.Join(want, "|") || len(tooLong) != 0 {
		t.Fatalf("lines = %q, too long = %v; want %q", lines, tooLong, want)
	}
}

func TestReaderDropsHugeLineAndGoesOn(t *testing.T) {
	huge := strings.Repeat("x", 10<<20)
	in := `{"type":"progress","message":"before"}` + "\n" + huge + "\n" + `{"type":"result","text":"after"}` + "\n"
	lines, tooLong := readAll(t, NewReader(strings.NewReader(in), DefaultMaxLineBytes))
	if len(lines) != 2 || !strings.Contains(lines[1], "after") {
		t.Fatalf("lines = %d %q…; want the line before and the line after", len(lines), lines)
	}
	if len(tooLong) != 1 || tooLong[0] != 10<<20 {
		t.Fatalf("too long = %v; want one line of %d bytes", tooLong, 10<<20)
	}
}

func TestReaderMemoryBoundedByLimit(t *testing.T) {
	r := NewReader(strings.NewReader(strings.Repeat("y", 5<<20)+"\nok\n"), 1<<16)
	if _, err := r.Next(); err == nil {
		t.Fatal("want a too-long error")
	}
	if cap(r.buf) > (1<<16)+readBufferSize*2 {
		t.Fatalf("gathering buffer grew to %d bytes for a limit of %d", cap(r.buf), 1<<16)
	}
	line, err := r.Next()
	if err != nil || string(line) != "ok" {
		t.Fatalf("next line = %q, %v; want ok", line, err)
	}
}

func TestReaderLimitIsInclusive(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		lines    int
		tooLong  int
	}{
		{"at limit", strings.Repeat("a", 8) + "\n", 1, 0},
		{"at limit with CR", strings.Repeat("a", 8) + "\r\n", 1, 0},
		{"over limit", strings.Repeat("a", 9) + "\n", 0, 1},
		{"over limit at EOF", strings.Repeat("a", 9), 0, 1},
		{"long but allowed across buffer fills", strings.Repeat("b", 3*readBufferSize) + "\n", 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limit := 8
			if tc.name == "long but allowed across buffer fills" {
				limit = 4 * readBufferSize
			}
			lines, tooLong := readAll(t, NewReader(strings.NewReader(tc.in), limit))
			if len(lines) != tc.lines || len(tooLong) != tc.tooLong {
				t.Fatalf("lines %d too long %d; want %d and %d", len(lines), len(tooLong), tc.lines, tc.tooLong)
			}
		})
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("a\nb\r\n\n"), 4)
	f.Add([]byte(strings.Repeat("z", 9000)+"\nq"), 100)
	f.Fuzz(func(t *testing.T, data []byte, limit int) {
		if limit <= 0 || limit > 1<<16 {
			limit = 1 + (limit&0x7fff)%9000
		}
		r := NewReader(strings.NewReader(string(data)), limit)
		total := 0
		for i := 0; ; i++ {
			if i > len(data)+1 {
				t.Fatal("Reader did not reach EOF")
			}
			line, err := r.Next()
			var tl *LineTooLongError
			if errors.As(err, &tl) {
				if tl.Size <= limit-1 {
					t.Fatalf("line of %d reported too long for limit %d", tl.Size, limit)
				}
				total += tl.Size
				continue
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(line) > limit {
				t.Fatalf("line of %d bytes passed a limit of %d", len(line), limit)
			}
			if strings.ContainsRune(string(line), '\n') {
				t.Fatalf("line contains a newline: %q", line)
			}
			total += len(line)
		}
		if total > len(data) {
			t.Fatalf("read %d bytes from %d", total, len(data))
		}
	})
}

// TestReaderBufferedSaysWhenNextWillNotRead: Buffered is true exactly when a whole
// non-empty line waits in the buffer, so a reader can batch what it has without
// blocking on the stream.
func TestReaderBufferedSaysWhenNextWillNotRead(t *testing.T) {
	pr, pw := io.Pipe()
	r := NewReader(pr, 100)
	go func() { _, _ = pw.Write([]byte("one\ntwo\n\r\n\npartial")) }()
	if line, err := r.Next(); err != nil || string(line) != "one" {
		t.Fatalf("Next = %q, %v", line, err)
	}
	if !r.Buffered() {
		t.Fatal("Buffered = false with \"two\" waiting")
	}
	if line, _ := r.Next(); string(line) != "two" {
		t.Fatalf("Next = %q", line)
	}
	if r.Buffered() {
		t.Fatal("Buffered = true with only empty lines and a partial one waiting: Next would block")
	}
	go func() {
		_, _ = pw.Write([]byte(" line\n"))
		pw.Close()
	}()
	if line, _ := r.Next(); string(line) != "partial line" {
		t.Fatalf("Next = %q", line)
	}
	if r.Buffered() {
		t.Fatal("Buffered = true at the end")
	}
}
