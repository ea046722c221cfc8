package session

import "syscall"

// procAttr puts the extension in its own process group and has the kernel
// kill it if the daemon dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
