package pipe

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"testing"
	"testing/synctest"
	"time"
)

// A writer runs ahead of its reader by up to the buffer, as on a kernel pipe, and the
// reader gets every byte in order, however the writes and reads are cut.
func TestBytesArriveInOrderWhateverTheCuts(t *testing.T) {
	r, w := New(1000)
	want := make([]byte, 200_000)
	for i := range want {
		want[i] = byte(rand.IntN(256))
	}
	go func() {
		for b := want; len(b) > 0; {
			k := min(len(b), 1+rand.IntN(3000))
			var n int
			var err error
			if rand.IntN(2) == 0 {
				n, err = w.Write(b[:k])
			} else {
				n, err = w.TryWrite(b[:k])
			}
			if err != nil {
				t.Errorf("write: %v", err)
				return
			}
			b = b[n:]
		}
		w.Close()
	}()
	var got bytes.Buffer
	buf := make([]byte, 777)
	for {
		n, err := r.Read(buf[:1+rand.IntN(len(buf))])
		got.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("read %d bytes, not the %d written in order", got.Len(), len(want))
	}
}

func TestAWriteReturnsOnceBufferedWithNoReader(t *testing.T) {
	_, w := New(Size)
	for range Size / 64 {
		if n, err := w.Write(make([]byte, 64)); n != 64 || err != nil {
			t.Fatalf("write into a buffer with room: %d, %v", n, err)
		}
	}
	if n, err := w.TryWrite([]byte("x")); n != 0 || err != nil {
		t.Fatalf("TryWrite into a full buffer: %d, %v; want 0 and no error", n, err)
	}
}

// A write to a full pipe waits for room until its deadline, as a process's stdin
// does; what it wrote before is counted.
func TestAWriteToAFullPipeEndsAtItsDeadline(t *testing.T) {
	synctest.Test(t, testAWriteToAFullPipeEndsAtItsDeadline)
}

func testAWriteToAFullPipeEndsAtItsDeadline(t *testing.T) {
	_, w := New(10)
	if err := w.SetWriteDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	n, err := w.Write([]byte("0123456789abc"))
	if n != 10 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write of 13 bytes into 10 with no reader: %d, %v; want 10 and the deadline exceeded", n, err)
	}
	if n, err := w.Write([]byte("d")); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write after the deadline: %d, %v", n, err)
	}
}

func TestAWaitingWriteGoesOnWhenTheReaderReads(t *testing.T) {
	r, w := New(4)
	done := make(chan error, 1)
	go func() {
		_, err := w.Write([]byte("abcdefgh"))
		done <- err
	}()
	got, err := io.ReadAll(io.LimitReader(r, 8))
	if err != nil || string(got) != "abcdefgh" {
		t.Fatalf("read %q, %v", got, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// While a Write waits for room, TryWrite writes nothing: its bytes would go before
// the rest of the waiting write's.
func TestTryWriteNeverOvertakesAWaitingWrite(t *testing.T) {
	synctest.Test(t, testTryWriteNeverOvertakesAWaitingWrite)
}

func testTryWriteNeverOvertakesAWaitingWrite(t *testing.T) {
	r, w := New(4)
	done := make(chan error, 1)
	go func() {
		_, err := w.Write([]byte("abcdefgh"))
		done <- err
	}()
	synctest.Wait() // the write has filled the pipe and waits for room
	if n, err := w.TryWrite([]byte("X")); n != 0 || err != nil {
		t.Fatalf("TryWrite while a write waits: %d, %v; want 0", n, err)
	}
	buf := make([]byte, 2)
	if _, err := io.ReadFull(r, buf); err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(io.LimitReader(r, 6))
	if string(buf)+string(got) != "abcdefgh" {
		t.Fatalf("read %q", string(buf)+string(got))
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestClosingTheWriteEndEndsReadsAfterTheBufferedBytes(t *testing.T) {
	r, w := New(Size)
	if _, err := w.Write([]byte("last words")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	got, err := io.ReadAll(r)
	if string(got) != "last words" || err != nil {
		t.Fatalf("read %q, %v after the writer closed; want its bytes, then EOF", got, err)
	}
	if n, err := w.TryWrite([]byte("more")); n != 0 || !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("TryWrite after Close: %d, %v", n, err)
	}
}

// Closing the read end fails writes, the one waiting for room too, and ends a read
// waiting for bytes.
func TestClosingTheReadEndFailsWritesAndEndsReads(t *testing.T) {
	synctest.Test(t, testClosingTheReadEndFailsWritesAndEndsReads)
}

func testClosingTheReadEndFailsWritesAndEndsReads(t *testing.T) {
	r, w := New(4)
	wrote := make(chan error, 1)
	go func() {
		_, err := w.Write([]byte("too long for four"))
		wrote <- err
	}()
	synctest.Wait() // the write has filled the pipe and waits for room
	r.Close()
	if err := <-wrote; !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("a waiting write after the reader closed: %v; want io.ErrClosedPipe", err)
	}

	r, w = New(4)
	read := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 1))
		read <- err
	}()
	r.Close()
	if err := <-read; !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("a waiting read after its end closed: %v; want io.ErrClosedPipe", err)
	}
	if _, err := w.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("a write after the reader closed: %v", err)
	}
}

// An idle pipe does not keep the buffer a burst grew.
func TestAnEmptiedPipeLetsABigBufferGo(t *testing.T) {
	r, w := New(Size)
	if _, err := w.Write(make([]byte, Size)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(r, make([]byte, Size)); err != nil {
		t.Fatal(err)
	}
	if c := cap(r.p.buf); c > keep {
		t.Fatalf("an empty pipe holds a %d-byte buffer; want at most %d", c, keep)
	}
}
