// Package proc reads what the system says of a process: its state, its
// process group and its start time. A pid alone names a process only until
// it exits and the number is given again; the pid with its start time
// names one process for good, which is what an executor records to adopt
// a detached job after its package restarts (sdk.DetachedProcess takes
// both). Only Linux's /proc is read; elsewhere Supported is false and
// every call answers ErrUnsupported.
package proc

import "errors"

// Info is what /proc/PID/stat says of one process.
type Info struct {
	// State is field 3: R, S, D, T, Z (exited, not yet reaped), X (dead) …
	State byte
	// PGID is field 5, the process group.
	PGID int
	// StartTicks is field 22: when the process started, in clock ticks
	// after boot. With the boot (BootID), it tells this process from a
	// later one given the same pid.
	StartTicks uint64
}

// Exited reports whether the process has exited (it may await reaping).
func (i Info) Exited() bool { return i.State == 'Z' || i.State == 'X' }

var (
	// ErrNoProcess is Stat's answer for a pid no process has.
	ErrNoProcess = errors.New("no such process")
	// ErrUnsupported is every answer on a system without /proc.
	ErrUnsupported = errors.New("reading a process's identity needs Linux's /proc")
)
