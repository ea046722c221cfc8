//go:build unix

package jsonrpc

import (
	"io"
	"syscall"
	"time"
)

// rawWriter is w's descriptor when w is a file the runtime polls (a pipe or
// a socket set non-blocking), whose write can be offered once without
// blocking; nil otherwise. A writer that only wraps such a file gets the
// raw path by forwarding SyscallConn and SetWriteDeadline.
func rawWriter(w io.Writer) syscall.RawConn {
	sc, ok := w.(syscallConner)
	d, hasDeadline := w.(deadliner)
	if !ok || !hasDeadline {
		return nil
	}
	return rawConn(sc, d.SetWriteDeadline)
}

// rawReader is r's descriptor when r is a file the runtime polls, so a read
// that finds nothing waits in the runtime's poller; nil otherwise.
func rawReader(r io.Reader) syscall.RawConn {
	sc, ok := r.(syscallConner)
	d, hasDeadline := r.(readDeadliner)
	if !ok || !hasDeadline {
		return nil
	}
	return rawConn(sc, d.SetReadDeadline)
}

// rawConn is sc's descriptor when clearing its deadline with clear works,
// which only a file the runtime polls allows; nil otherwise. newGuard hands
// it a file directly, without asking the interfaces of it at run time.
func rawConn(sc syscallConner, clear func(time.Time) error) syscall.RawConn {
	if clear(time.Time{}) != nil {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// rawSyscallMax is the largest read or write made without telling the
// runtime's scheduler. On a non-blocking descriptor neither can block, only
// copy: up to this much the copy is quicker than the scheduler's own
// bookkeeping for a system call, whose first call after the process idled
// also wakes the runtime's monitor thread (a futex and a thread switch per
// message on a quiet connection). Larger copies take the ordinary path.
const rawSyscallMax = 64 << 10

// writeOnce writes p to the non-blocking fd once and says how much was
// taken (none on EAGAIN or an error).
func writeOnce(fd uintptr, p []byte) int {
	if len(p) == 0 {
		return 0
	}
	if len(p) > rawSyscallMax {
		n, err := syscall.Write(int(fd), p)
		if err != nil || n < 0 {
			return 0
		}
		return n
	}
	n, errno := sysWrite(fd, p)
	if errno != 0 {
		return 0
	}
	return n
}

// readOnce reads into p, at most rawSyscallMax of it, from the
// non-blocking fd once. It reports the bytes read and whether to stop
// waiting: false when nothing is there yet (the poller waits for more),
// true with n > 0 for data, and true with n == 0 when the read hit the end
// or an error, which the caller then reads the ordinary way to learn which.
func readOnce(fd uintptr, p []byte) (n int, done bool) {
	p = p[:min(len(p), rawSyscallMax)]
	if len(p) == 0 {
		return 0, true
	}
	for {
		r, errno := sysRead(fd, p)
		switch errno {
		case 0:
			return r, true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return 0, false
		default:
			return 0, true
		}
	}
}
