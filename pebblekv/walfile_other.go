//go:build !linux

package pebblekv

import "github.com/cockroachdb/pebble/v2/vfs"

// preallocateSized leaves f to its own Preallocate: the sizing is Linux's
// fallocate (Pebble preallocates nothing elsewhere either).
func preallocateSized(f vfs.File, offset, length int64) error {
	return f.Preallocate(offset, length)
}
