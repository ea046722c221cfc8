//go:build unix && !race

package jsonrpc

import (
	"syscall"
	"unsafe"
)

// sysRead reads the non-blocking fd into p with the system call made
// directly, without the scheduler's bookkeeping.
func sysRead(fd uintptr, p []byte) (int, syscall.Errno) {
	n, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	return int(n), errno
}

// sysWrite writes p to the non-blocking fd with the system call made
// directly.
func sysWrite(fd uintptr, p []byte) (int, syscall.Errno) {
	n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	return int(n), errno
}
