package sdk

import (
	"syscall"
	"unsafe"
)

// stdinIsTerminal reports whether fd 0 is a terminal: the termios request
// succeeds only on one.
func stdinIsTerminal() bool {
	var t syscall.Termios
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, 0, syscall.TCGETS, uintptr(unsafe.Pointer(&t)))
	return errno == 0
}
