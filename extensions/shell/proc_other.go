//go:build !linux

package shell

// procInfo is what the system says of a process; this system has no /proc,
// so nothing is known and no command is started.
type procInfo struct {
	State      byte
	PGID       int
	StartTicks uint64
}

func procStat(int) (procInfo, bool) { return procInfo{}, false }

func groupMembers(int, uint64) []int { return nil }

// procSupported says process identity (pid and start time) cannot be read
// here, so the executor refuses to run: it could never re-adopt safely.
const procSupported = false
