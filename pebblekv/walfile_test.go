package pebblekv

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

func TestWALFileIsSizedAheadOfItsRecords(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the WAL is sized with Linux's fallocate; elsewhere Pebble writes it as it is")
	}
	db := openDB(t, nil)
	putKeys(t, db, "n", 3, 64)
	wal := onlyFile(t, db.Dir(), ".log")
	size, end := fileSize(t, wal), writtenEnd(t, wal)
	if end == 0 || end > 64<<10 || size < 1<<20 {
		t.Errorf("the store's WAL: %d bytes written, file of %d bytes; want a file sized a megabyte or more ahead of a few records", end, size)
	}

	// Negative control: Pebble's own WAL keeps its size where its records end.
	dir := t.TempDir()
	raw, err := pebble.Open(dir, &pebble.Options{FormatMajorVersion: pebble.FormatTableFormatV6, Logger: slogLogger{l: slog.New(slog.DiscardHandler)}})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if err := raw.Set([]byte("k"), bytes.Repeat([]byte("v"), 64), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	rawWAL := onlyFile(t, dir, ".log")
	if size, end := fileSize(t, rawWAL), writtenEnd(t, rawWAL); size != end || size == 0 {
		t.Errorf("raw Pebble's WAL: %d bytes written, file of %d bytes; want the same", end, size)
	}
}

func TestSizedWALReopensWithEveryCommit(t *testing.T) {
	for _, crash := range []bool{false, true} {
		name := map[bool]string{false: "closed", true: "copied while open, as a crash leaves it"}[crash]
		t.Run(name, func(t *testing.T) {
			live, err := Open(t.TempDir(), nil)
			if err != nil {
				t.Fatal(err)
			}
			putKeys(t, live, "n", 50, 64)
			dir := live.Dir()
			if crash {
				dir = copyStore(t, dir)
			}
			if err := live.Close(); err != nil {
				t.Fatal(err)
			}
			ro, err := Open(dir, &Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer ro.Close()
			if ro.Commits() != 50 {
				t.Errorf("%d commits after reopening, want 50", ro.Commits())
			}
			for _, r := range ro.Recovery().Replays {
				if r.Unread() != 0 {
					t.Errorf("the replay of %s stopped at %d of the %d bytes written", filepath.Base(r.WAL), r.Offset, r.End)
				}
			}
			if got := kvGet(t, ro, "n", healthKey(49)); !bytes.Equal(got, healthValue(49, 64)) {
				t.Errorf("the last key reads %q", got)
			}
		})
	}
}

func TestWrittenEndLeavesOutTheZerosAtTheEnd(t *testing.T) {
	block := 64 << 10
	for _, tc := range []struct {
		name string
		data []byte
		want int64
	}{
		{"empty", nil, 0},
		{"all zeros", make([]byte, 3*block+5), 0},
		{"no zeros", []byte("abc"), 3},
		{"zeros after", []byte("abc\x00\x00"), 3},
		{"zeros between", []byte("a\x00b\x00\x00"), 3},
		{"a multi-byte character last", []byte("é\x00"), 2},
		{"last byte on a block's first", append(make([]byte, block), 1), int64(block) + 1},
		{"last byte on a block's last", append(append(make([]byte, block-1), 1), make([]byte, 2*block)...), int64(block)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f")
			if err := os.WriteFile(path, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			if got := writtenEnd(t, path); got != tc.want {
				t.Errorf("WrittenEnd %d, want %d", got, tc.want)
			}
		})
	}
	if _, err := WrittenEnd(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("WrittenEnd of a missing file is not an error")
	}
}

func TestReplayUnreadLeavesOutAClosedWALsTrailer(t *testing.T) {
	for _, tc := range []struct {
		offset, end, want int64
	}{
		{100, 100, 0},
		{100, 90, 0},               // the last record ends in zero bytes
		{100, 100 + walTrailer, 0}, // a closed WAL's trailer
		{100, 101 + walTrailer, 101 + walTrailer - 100}, // a record's header and a byte
		{100, 5000, 4900},
	} {
		if got := (Replay{Offset: tc.offset, End: tc.end}).Unread(); got != tc.want {
			t.Errorf("stopped at %d of %d written: Unread %d, want %d", tc.offset, tc.end, got, tc.want)
		}
	}
}
