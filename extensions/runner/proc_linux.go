package runner

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// procInfo is what /proc/PID/stat says of one process.
type procInfo struct {
	// state is field 3: R, S, D, Z (exited, not yet reaped), X (dead) …
	state byte
	// pgrp is field 5, the process group.
	pgrp int
	// start is field 22: when the process started, in clock ticks since
	// boot. With the boot ID, it tells this process from a later one that
	// was given the same pid.
	start uint64
}

// dead reports whether the process has exited (it may await reaping).
func (p procInfo) dead() bool { return p.state == 'Z' || p.state == 'X' }

// errNoProcess: no process has the pid.
var errNoProcess = errors.New("no such process")

// readProc reads /proc/PID/stat.
func readProc(pid int) (procInfo, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, os.ErrProcessDone) {
		return procInfo{}, errNoProcess
	}
	if err != nil {
		return procInfo{}, err
	}
	return parseStat(raw)
}

// parseStat decodes a stat line. The command (field 2) is in parentheses
// and may hold spaces and parentheses itself, so the fields after it are
// found from its last ')'.
func parseStat(raw []byte) (procInfo, error) {
	end := bytes.LastIndexByte(raw, ')')
	if end < 0 {
		return procInfo{}, fmt.Errorf("a /proc stat line without its command: %q", raw)
	}
	f := strings.Fields(string(raw[end+1:]))
	// f[0] is field 3, so field n is f[n-3].
	if len(f) < 20 || len(f[0]) != 1 {
		return procInfo{}, fmt.Errorf("a /proc stat line of %d fields after the command", len(f))
	}
	pgrp, err := strconv.Atoi(f[5-3])
	if err != nil {
		return procInfo{}, fmt.Errorf("/proc stat field 5: %v", err)
	}
	start, err := strconv.ParseUint(f[22-3], 10, 64)
	if err != nil {
		return procInfo{}, fmt.Errorf("/proc stat field 22: %v", err)
	}
	return procInfo{state: f[0][0], pgrp: pgrp, start: start}, nil
}

// groupMembers lists the live (not exited) processes of process group
// pgid, from /proc: what is left of a job.
func groupMembers(pgid int) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		p, err := readProc(pid)
		if err != nil {
			continue // gone since the listing, or not ours to read
		}
		if p.pgrp == pgid && !p.dead() {
			out = append(out, pid)
		}
	}
	return out, nil
}

// bootID names the running boot, so a start time is never compared
// across a reboot, when clock ticks since boot start again.
func bootID() string {
	raw, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(raw))
}
