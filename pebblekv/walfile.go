package pebblekv

import (
	"io"
	"os"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// A WAL's file, sized ahead of its writes.
//
// Pebble preallocates a WAL's blocks ahead of its writes but keeps the
// file's size where the writes end (fallocate with FALLOC_FL_KEEP_SIZE), so
// each synced commit also grows the file, and its fdatasync must commit
// that size change to the filesystem's journal besides the data. On ext4 a
// 200-byte write's fdatasync took 161-227 µs (p50, five runs) in a file
// preallocated Pebble's way against 122-150 µs in one preallocated at its
// full size.
// Pebble writes its WALs through sizedWALs, which preallocates them at
// their full size instead, so a commit's sync writes the data alone.
//
// Pebble reads the zeros after a WAL's last record as its end. It closes a
// WAL with an EOF trailer before it starts the next one, so only the last
// WAL can end without one: the WAL being written when the process died.
// Pebble reads that one's first zeroed chunk as a torn tail and keeps
// every record before it, as it does for a WAL its own preallocation or
// recycling left with a tail that is not records. Replay.End, not the
// file's size, is where a WAL's bytes end.

// walCategory is the write category Pebble creates its WAL files with.
const walCategory vfs.DiskWriteCategory = "pebble-wal"

// SizedWALs is fs with Pebble's WAL files preallocated at their full size,
// as the store writes them; for a program that opens Pebble itself and
// compares its commits with the store's (the store benchmark).
func SizedWALs(fs vfs.FS) vfs.FS { return sizedWALs{fs} }

// sizedWALs is the filesystem Pebble writes through: its own, except that
// WAL files are preallocated at their full size.
type sizedWALs struct{ vfs.FS }

// Create implements vfs.FS.
func (fs sizedWALs) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	return sizeWAL(f, err, name, category)
}

// ReuseForWrite implements vfs.FS: a recycled WAL is sized as a new one.
func (fs sizedWALs) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	return sizeWAL(f, err, newname, category)
}

// Unwrap implements vfs.FS.
func (fs sizedWALs) Unwrap() vfs.FS { return fs.FS }

// sizeWAL wraps f, the file name opened for writing, when it is a WAL.
func sizeWAL(f vfs.File, err error, name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if err != nil || category != walCategory || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return sizedWAL{f}, nil
}

// sizedWAL is a WAL file whose preallocation extends its size.
type sizedWAL struct{ vfs.File }

// Preallocate implements vfs.File. Pebble ignores its error (a filesystem
// that cannot preallocate is written as it is), and so does the store.
func (f sizedWAL) Preallocate(offset, length int64) error {
	return preallocateSized(f.File, offset, length)
}

// WrittenEnd is where the bytes of the file at path end: its size, less
// the zero bytes at its end, which a WAL's preallocation leaves there
// until records overwrite them.
func WrittenEnd(path string) (int64, error) {
	_, end, err := extent(path)
	return end, err
}

// extent is the size of the file at path and where its bytes end
// (WrittenEnd), from one open.
func extent(path string) (size, end int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	buf := make([]byte, 64<<10)
	for end := fi.Size(); end > 0; {
		n := min(end, int64(len(buf)))
		if _, err := f.ReadAt(buf[:n], end-n); err != nil && err != io.EOF {
			return 0, 0, err
		}
		for i := n - 1; i >= 0; i-- {
			if buf[i] != 0 {
				return fi.Size(), end - n + i + 1, nil
			}
		}
		end -= n
	}
	return fi.Size(), 0, nil
}
