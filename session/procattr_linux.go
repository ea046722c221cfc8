package session

import (
	"os"
	"syscall"
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
