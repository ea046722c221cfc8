package jsonrpc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// chunkReader hands its data out a few bytes at a time, so lines straddle
// reads.
type chunkReader struct {
	data  []byte
	chunk int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.chunk)], r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestLineReaderAcrossReadsAndLongLines reads short lines, lines longer than
// the reader's buffer (which keep a buffer of their own) and the short lines
// that follow them in the same read, whatever the reads' sizes.
func TestLineReaderAcrossReadsAndLongLines(t *testing.T) {
	want := []string{"a", "", strings.Repeat("b", readBufferSize+17), "c", strings.Repeat("d", 3*readBufferSize), "e"}
	input := []byte(strings.Join(want, "\n") + "\n")
	for _, chunk := range []int{1 << 20, 4096, 7} {
		g := newGuard(&chunkReader{data: input, chunk: chunk}, io.Discard, 4*readBufferSize, time.Second)
		var kept [][]byte
		for i, w := range want {
			line, err := g.readFrame(context.Background())
			if err != nil {
				t.Fatalf("chunk %d, line %d: %v", chunk, i, err)
			}
			if string(line) != w {
				t.Fatalf("chunk %d, line %d: got %d bytes, want %d", chunk, i, len(line), len(w))
			}
			if g.owned != (len(w) > readBufferSize) {
				t.Fatalf("chunk %d, line %d (%d bytes): owned %v", chunk, i, len(w), g.owned)
			}
			if g.owned {
				kept = append(kept, line)
			}
		}
		if _, err := g.readFrame(context.Background()); !errors.Is(err, io.EOF) {
			t.Fatalf("chunk %d: after the last line got %v, want EOF", chunk, err)
		}
		// An owned line is never rewritten by the reads after it.
		if !bytes.Equal(kept[0], []byte(want[2])) || !bytes.Equal(kept[1], []byte(want[4])) {
			t.Fatalf("chunk %d: a long line was rewritten after it was handed up", chunk)
		}
	}
}

// TestLineReaderGrowsItsBufferOnceForLongLines: a connection starts with a
// small buffer; the first line longer than it gives the reader the full
// buffer for good, in which that line and the long lines after it are read
// in place (not in a buffer of their own, as one past the full size is).
func TestLineReaderGrowsItsBufferOnceForLongLines(t *testing.T) {
	long := strings.Repeat("c", 2*readBufferStart)
	want := []string{"a", long, "b", long, long, "z"}
	g := newGuard(&chunkReader{data: []byte(strings.Join(want, "\n") + "\n"), chunk: 4096}, io.Discard, 4*readBufferSize, time.Second)
	if len(g.buf) != readBufferStart {
		t.Fatalf("a new reader's buffer is %d bytes, want %d", len(g.buf), readBufferStart)
	}
	for i, w := range want {
		line, err := g.readFrame(context.Background())
		if err != nil || string(line) != w {
			t.Fatalf("line %d: %d bytes, %v", i, len(line), err)
		}
		if g.owned {
			t.Fatalf("line %d (%d bytes) was read into a buffer of its own", i, len(w))
		}
		if wantLen := readBufferSize; i > 0 && len(g.buf) != wantLen {
			t.Fatalf("after line %d the buffer is %d bytes, want %d", i, len(g.buf), wantLen)
		}
	}
	if g.spare != nil {
		t.Fatal("the grown buffer left a spare behind")
	}
}

// TestLineReaderBoundAndCutOffLine ends reading on a line over the bound,
// with or without its newline, and reports a last line without one as cut
// off.
func TestLineReaderBoundAndCutOffLine(t *testing.T) {
	for _, input := range []string{strings.Repeat("x", 101) + "\n", strings.Repeat("x", 500)} {
		g := newGuard(&chunkReader{data: []byte("ok\n" + input), chunk: 64}, io.Discard, 100, time.Second)
		if line, err := g.readFrame(context.Background()); err != nil || string(line) != "ok" {
			t.Fatalf("first line: %q, %v", line, err)
		}
		if _, err := g.readFrame(context.Background()); !errors.Is(err, ErrMessageTooLarge) {
			t.Fatalf("%d bytes: got %v, want ErrMessageTooLarge", len(input), err)
		}
	}
	g := newGuard(&chunkReader{data: []byte(strings.Repeat("x", 100)), chunk: 64}, io.Discard, 100, time.Second)
	if _, err := g.readFrame(context.Background()); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a line cut off by the end: got %v, want io.ErrUnexpectedEOF", err)
	}
	g = newGuard(&chunkReader{data: []byte(strings.Repeat("x", 100) + "\n"), chunk: 64}, io.Discard, 100, time.Second)
	if line, err := g.readFrame(context.Background()); err != nil || len(line) != 100 {
		t.Fatalf("a line at the bound: %d bytes, %v", len(line), err)
	}
}

// TestLineReaderKeepsWhatFollowsALongLineBeyondTheDefaultBuffer reads a
// long line that one read delivers together with more than the default
// buffer's worth of the lines after it (a socket hands over what it holds):
// none of what follows may be lost when the reader goes back to its default
// buffer.
func TestLineReaderKeepsWhatFollowsALongLineBeyondTheDefaultBuffer(t *testing.T) {
	var want []string
	// 2.7 buffers: the buffer doubles to four, and the read that ends the
	// line brings well over one buffer of what follows.
	want = append(want, strings.Repeat("L", 27*readBufferSize/10))
	for i := range 3 * readBufferSize / 100 {
		want = append(want, strings.Repeat(string(rune('a'+i%26)), 99))
	}
	want = append(want, strings.Repeat("M", 2*readBufferSize), "end")
	input := []byte(strings.Join(want, "\n") + "\n")
	g := newGuard(&chunkReader{data: input, chunk: len(input)}, io.Discard, 4*readBufferSize, time.Second)
	for i, w := range want {
		line, err := g.readFrame(context.Background())
		if err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if string(line) != w {
			t.Fatalf("line %d: got %d bytes (%.20q…), want %d (%.20q…)", i, len(line), line, len(w), w)
		}
	}
	if _, err := g.readFrame(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last line got %v, want EOF", err)
	}
}
