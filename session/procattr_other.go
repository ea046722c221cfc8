//go:build unix && !linux

package session

import (
	"os"
	"syscall"
)

// procAttr starts the extension in a session of its own (so its process
// group too). Without a parent-death signal here, the SDK's exit on stdin
// EOF is what keeps a crashed daemon from orphaning it.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}

// stderrPipe is the pipe an extension's stderr is drained from.
func stderrPipe() (r, w *os.File, err error) { return os.Pipe() }
