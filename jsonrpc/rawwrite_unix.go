//go:build unix

package jsonrpc

import (
	"io"
	"os"
	"syscall"
	"time"
)

// rawWriter is w's descriptor when w is a file the runtime polls (a pipe or
// a socket set non-blocking), whose write can be offered once without
// blocking; nil otherwise.
func rawWriter(w io.Writer) syscall.RawConn {
	f, ok := w.(*os.File)
	if !ok || f.SetWriteDeadline(time.Time{}) != nil {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// writeOnce writes p to the non-blocking fd once and says how much was
// taken (none on EAGAIN or an error).
func writeOnce(fd uintptr, p []byte) int {
	n, err := syscall.Write(int(fd), p)
	if err != nil || n < 0 {
		return 0
	}
	return n
}
