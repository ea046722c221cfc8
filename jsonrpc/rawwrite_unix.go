//go:build unix

package jsonrpc

import (
	"io"
	"syscall"
	"time"
)

// syscallConner is a writer that lends its descriptor: an *os.File, a
// net.Conn, or a wrapper around one that forwards the method (the session's
// pipe to an extension does).
type syscallConner interface {
	SyscallConn() (syscall.RawConn, error)
}

// rawWriter is w's descriptor when w is a file the runtime polls (a pipe or
// a socket set non-blocking), whose write can be offered once without
// blocking; nil otherwise. A writer that only wraps such a file gets the
// raw path by forwarding SyscallConn and SetWriteDeadline.
func rawWriter(w io.Writer) syscall.RawConn {
	sc, ok := w.(syscallConner)
	d, hasDeadline := w.(deadliner)
	if !ok || !hasDeadline || d.SetWriteDeadline(time.Time{}) != nil {
		return nil
	}
	rc, err := sc.SyscallConn()
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
