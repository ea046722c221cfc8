//go:build unix

package main

import (
	"fmt"
	"os"
	"syscall"
)

// takeStdio returns private, non-blocking files for the protocol on
// duplicates of fds 0 and 1, as Open Conduit's SDK does: a pipe in
// non-blocking mode is read and written through Go's poller instead of
// parking a thread in a syscall, which answers nested calls and cancels
// several times faster. Duplicates, because os.Stdin and os.Stdout already
// hold fds 0 and 1 as blocking files. A terminal or a file is left
// blocking (someone running the binary by hand).
func takeStdio() (in, out *os.File, err error) {
	var fds [2]int
	for i := range fds {
		if fds[i], err = dupCloexec(i); err != nil {
			return nil, nil, fmt.Errorf("duplicating fd %d: %w", i, err)
		}
		if pollable(fds[i]) {
			if err := syscall.SetNonblock(fds[i], true); err != nil {
				return nil, nil, fmt.Errorf("setting fd %d non-blocking: %w", i, err)
			}
		}
	}
	return os.NewFile(uintptr(fds[0]), "protocol-in"), os.NewFile(uintptr(fds[1]), "protocol-out"), nil
}

// dupCloexec duplicates fd under the fork lock, so no child started
// meanwhile inherits the copy.
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

// pollable reports whether fd is a pipe or a socket.
func pollable(fd int) bool {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return false
	}
	mode := st.Mode & syscall.S_IFMT
	return mode == syscall.S_IFIFO || mode == syscall.S_IFSOCK
}
