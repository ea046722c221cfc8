//go:build linux

package shell

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// procInfo is what /proc/PID/stat says of a process: its state letter, its
// process group and its start time (clock ticks after boot, field 22),
// which with the pid names one process for good: a reused pid has another
// start time.
type procInfo struct {
	State      byte
	PGID       int
	StartTicks uint64
}

// procStat reads /proc/PID/stat; ok is false when no such process exists.
func procStat(pid int) (procInfo, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	info, err := parseStat(b)
	return info, err == nil
}

// parseStat reads the fields after the command name, which may itself hold
// spaces and parentheses, so the fields start after its last ')'.
func parseStat(b []byte) (procInfo, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procInfo{}, fmt.Errorf("no command name")
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state), so field n is f[n-3].
	if len(f) < 20 || len(f[0]) != 1 {
		return procInfo{}, fmt.Errorf("%d fields", len(f)+2)
	}
	pgid, err := strconv.Atoi(string(f[5-3]))
	if err != nil {
		return procInfo{}, err
	}
	start, err := strconv.ParseUint(string(f[22-3]), 10, 64)
	if err != nil {
		return procInfo{}, err
	}
	return procInfo{State: f[0][0], PGID: pgid, StartTicks: start}, nil
}

// groupMembers lists the live processes of process group pgid that started
// no earlier than its leader did (at startTicks). Linux never reuses a
// number while a process still has it as its group, so while any member
// lives the group is the leader's; the start-time bound keeps out the
// processes of an older group, should the number have been one before.
func groupMembers(pgid int, startTicks uint64) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		info, ok := procStat(pid)
		if ok && info.PGID == pgid && info.StartTicks >= startTicks && info.State != 'Z' && info.State != 'X' {
			out = append(out, pid)
		}
	}
	return out
}

// procSupported says process identity (pid and start time) can be read
// here.
const procSupported = true
