//go:build unix

package sdk

import (
	"fmt"
	"os"
	"syscall"
)

// takeStdio moves the protocol off fds 0 and 1 and returns private files for
// it. fd 0 becomes /dev/null and fd 1 a copy of stderr, at the OS level, so
// whatever the process or its children write to stdout lands in the log and
// whatever they read from stdin is empty. Pipes and sockets are switched to
// non-blocking mode, so reads and writes go through Go's poller instead of
// parking a thread in a syscall: nested calls and cancellation answer several
// times faster that way.
func takeStdio() (in, out *os.File, err error) {
	inFD, err := dupCloexec(0)
	if err != nil {
		return nil, nil, fmt.Errorf("taking stdin for the protocol: %w", err)
	}
	outFD, err := dupCloexec(1)
	if err != nil {
		return nil, nil, fmt.Errorf("taking stdout for the protocol: %w", err)
	}
	null, err := syscall.Open(os.DevNull, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("opening %s: %w", os.DevNull, err)
	}
	if err := dupOnto(null, 0); err != nil {
		return nil, nil, fmt.Errorf("pointing stdin at %s: %w", os.DevNull, err)
	}
	_ = syscall.Close(null)
	if err := dupOnto(2, 1); err != nil {
		return nil, nil, fmt.Errorf("pointing stdout at stderr: %w", err)
	}
	for _, fd := range []int{inFD, outFD} {
		if pollable(fd) {
			if err := syscall.SetNonblock(fd, true); err != nil {
				return nil, nil, fmt.Errorf("setting the protocol's fds non-blocking: %w", err)
			}
		}
	}
	return os.NewFile(uintptr(inFD), "protocol-in"), os.NewFile(uintptr(outFD), "protocol-out"), nil
}

func dupCloexec(fd int) (int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	nfd, err := syscall.Dup(fd)
	if err != nil {
		return -1, err
	}
	syscall.CloseOnExec(nfd)
	return nfd, nil
}

// pollable reports whether fd is a pipe or a socket; a terminal or a file is
// left blocking (a developer running the binary by hand).
func pollable(fd int) bool {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return false
	}
	mode := st.Mode & syscall.S_IFMT
	return mode == syscall.S_IFIFO || mode == syscall.S_IFSOCK
}
