package session

import (
	"os"
	"syscall"
	"unsafe"
)

// procAttr starts the extension in a session of its own (so its process
// group too): its descendants can join no group of the daemon's, so
// killing the extension's session never reaches the daemon. The kernel
// kills the extension if the daemon dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}

// stderrPipe is the pipe an extension's stderr is drained from. Its read
// end blocks and stays out of the runtime's poller: a poller registers it
// edge-triggered, so every line the extension writes would wake the
// daemon, while a blocked read wakes once and a paused reader not at all.
func stderrPipe() (r, w *os.File, err error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1"), nil
}

// protocolPipes are the extension's stdin (inR its end, inW ours) and
// stdout (outW its end, outR ours). Ours are non-blocking, in the runtime's
// poller, as os.Pipe makes them; the child's stay plain blocking files,
// which os.Pipe would also put in the poller, only for the exec to take
// them out again: ten system calls more on the way to every start.
func protocolPipes() (inR, inW, outR, outW *os.File, err error) {
	inR, inW, err = hostPipe(false)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	outR, outW, err = hostPipe(true)
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, nil, nil, nil, err
	}
	return inR, inW, outR, outW, nil
}

// protocolPipeBytes is the capacity asked for each protocol pipe. With the
// default 64 KiB an artifact chunk's line (about 350 KB for 256 KiB of data)
// crosses in six or more writes, each waking the reader for its part; a
// pipe that holds the whole line takes it in one. 1 MiB is the most an
// unprivileged process may ask for (fs.pipe-max-size's default); the pages
// are the kernel's, taken only while bytes wait in the pipe.
const protocolPipeBytes = 1 << 20

// hostPipe is a pipe with the host's end (the read end when hostReads, the
// write end otherwise) non-blocking.
func hostPipe(hostReads bool) (r, w *os.File, err error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, err
	}
	host := p[1]
	if hostReads {
		host = p[0]
	}
	if err := syscall.SetNonblock(host, true); err != nil {
		syscall.Close(p[0])
		syscall.Close(p[1])
		return nil, nil, err
	}
	// os.NewFile puts a non-blocking descriptor in the poller.
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1"), nil
}

// growPipe asks for protocolPipeBytes in the pipe f is an end of. Either
// end sizes a pipe, so the spawn sizes both protocol pipes through the
// host's ends once the process has started: the two system calls (about
// 12 µs on the benchmark machine) then run while the child's runtime sets
// itself up (about a millisecond) rather than before its exec, and still
// before the host writes its first line. Best effort: the default is the
// system's, and a pipe keeps it.
func growPipe(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_SETPIPE_SZ, protocolPipeBytes)
	})
}

// sysPidfdOpen is pidfd_open(2), the same number on every Linux
// architecture.
const sysPidfdOpen = 434

// awaitExit parks the caller in the runtime's poller until the process
// exits (its pidfd turns readable), so the Wait that follows returns at
// once. A Wait that blocks in waitid holds an OS thread and, until the
// runtime's monitor takes it back, a P: on a two-core machine the start's
// handshake then waited for a P while the new process was already
// answering. Where pidfd_open is missing, it returns at once and Wait
// blocks as before.
func awaitExit(pid int) {
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno != 0 {
		return
	}
	if err := syscall.SetNonblock(int(fd), true); err != nil {
		syscall.Close(int(fd))
		return
	}
	f := os.NewFile(fd, "pidfd")
	defer f.Close()
	parkUntilReadable(f)
}

// parkUntilReadable waits in the runtime's poller until f, which is in
// it, turns readable (or its peer is gone). The poller is edge-triggered,
// and the runtime forgets an edge it saw before the wait was armed, so the
// descriptor is asked first: a pidfd whose process exited before that, or a
// pipe written to, raises no second edge, and the wait would never end.
func parkUntilReadable(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	waited := false
	_ = rc.Read(func(fd uintptr) bool {
		// Once woken, done; before that, done only if it is readable
		// already (the wait is armed by now, so a later edge wakes it).
		done := waited || readableNow(fd)
		waited = true
		return done
	})
}

// readableNow reports whether fd has something to read, or its peer has
// gone, at this moment (ppoll with a zero timeout); on an error other than
// an interrupt it says yes, so the caller reads and meets the error there.
func readableNow(fd uintptr) bool {
	pfd := struct {
		fd      int32
		events  int16
		revents int16
	}{fd: int32(fd), events: pollIn}
	var zero syscall.Timespec
	for {
		n, _, errno := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&zero)), 0, 0, 0)
		switch {
		case errno == syscall.EINTR:
			continue
		case errno != 0:
			return true
		}
		return n > 0 && pfd.revents != 0
	}
}

// pollIn is POLLIN.
const pollIn = 0x1

// awaitStderr parks the caller in the runtime's poller until the stderr
// pipe's read end r has something to read or its writers are gone, and
// leaves r as it was: blocking and out of the poller, as the drain reads
// it. Most extensions write nothing to stderr while they start, so the
// drain holds no thread and no P through the handshake. It waits on a
// duplicate of r, which shares r's non-blocking flag while it is in the
// poller; closing the duplicate takes it out again. On any error it
// returns at once and the drain's blocking read waits instead.
func awaitStderr(r *os.File) {
	rc, err := r.SyscallConn()
	if err != nil {
		return
	}
	dup := -1
	_ = rc.Control(func(fd uintptr) {
		d, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_DUPFD_CLOEXEC, 0)
		if errno == 0 {
			dup = int(d)
		}
	})
	if dup < 0 {
		return
	}
	if err := syscall.SetNonblock(dup, true); err != nil {
		syscall.Close(dup)
		return
	}
	f := os.NewFile(uintptr(dup), "stderr")
	parkUntilReadable(f)
	f.Close()
	_ = rc.Control(func(fd uintptr) { _ = syscall.SetNonblock(int(fd), false) })
}
