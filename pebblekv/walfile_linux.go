package pebblekv

import (
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// preallocateSized allocates length bytes of f from offset and extends its
// size over them (fallocate's default mode): the range reads as zeros
// until written. A file without a descriptor is left to its own
// Preallocate.
func preallocateSized(f vfs.File, offset, length int64) error {
	fd := f.Fd()
	if fd == vfs.InvalidFd {
		return f.Preallocate(offset, length)
	}
	return syscall.Fallocate(int(fd), 0, offset, length)
}
