//go:build unix && race

package jsonrpc

import (
	"errors"
	"syscall"
)

// sysRead reads the non-blocking fd into p. Under the race detector it goes
// through syscall.Read, which tells the detector that what was written to a
// descriptor before happened before this read; a direct system call would
// not, and two ends of a pipe in one process would look like a race.
func sysRead(fd uintptr, p []byte) (int, syscall.Errno) {
	n, err := syscall.Read(int(fd), p)
	return max(n, 0), errnoOf(err)
}

// sysWrite writes p to the non-blocking fd, through syscall.Write under the
// race detector for the same reason.
func sysWrite(fd uintptr, p []byte) (int, syscall.Errno) {
	n, err := syscall.Write(int(fd), p)
	return max(n, 0), errnoOf(err)
}

func errnoOf(err error) syscall.Errno {
	var errno syscall.Errno
	if err != nil && !errors.As(err, &errno) {
		return syscall.EIO
	}
	return errno
}
