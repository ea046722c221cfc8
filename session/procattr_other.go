//go:build unix && !linux

package session

import "syscall"

// procAttr puts the extension in its own process group. Without a
// parent-death signal here, the SDK's exit on stdin EOF is what keeps a
// crashed daemon from orphaning it.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
