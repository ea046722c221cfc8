//go:build linux

package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Supported says process identity can be read here.
const Supported = true

// Stat reads /proc/PID/stat; ErrNoProcess when no process has the pid
// (reading the file of a process that exits meanwhile fails with ESRCH).
func Stat(pid int) (Info, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return Info{}, ErrNoProcess
	}
	if err != nil {
		return Info{}, err
	}
	return parse(raw)
}

// parse decodes a stat line. The command (field 2) is in parentheses and
// may hold spaces and parentheses itself, so the fields after it are found
// from its last ')'.
func parse(raw []byte) (Info, error) {
	end := bytes.LastIndexByte(raw, ')')
	if end < 0 {
		return Info{}, fmt.Errorf("a /proc stat line without its command: %q", raw)
	}
	f := bytes.Fields(raw[end+1:])
	// f[0] is field 3, so field n is f[n-3].
	if len(f) < 20 || len(f[0]) != 1 {
		return Info{}, fmt.Errorf("a /proc stat line of %d fields after the command", len(f))
	}
	pgid, err := strconv.Atoi(string(f[5-3]))
	if err != nil {
		return Info{}, fmt.Errorf("/proc stat field 5: %w", err)
	}
	start, err := strconv.ParseUint(string(f[22-3]), 10, 64)
	if err != nil {
		return Info{}, fmt.Errorf("/proc stat field 22: %w", err)
	}
	return Info{State: f[0][0], PGID: pgid, StartTicks: start}, nil
}

// GroupMembers lists the live (not exited) processes of process group
// pgid that started at or after since (clock ticks; 0 for any). Linux
// never gives a number out while a process still has it as its group, so
// while any member lives the group is its leader's; bounding by the
// leader's start time keeps out an older group that once had the number.
func GroupMembers(pgid int, since uint64) ([]int, error) {
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
		info, err := Stat(pid)
		if err != nil {
			continue // gone since the listing, or not ours to read
		}
		if info.PGID == pgid && info.StartTicks >= since && !info.Exited() {
			out = append(out, pid)
		}
	}
	return out, nil
}

// BootID names the running boot ("" when unknown), so a start time is never
// compared across a reboot, when clock ticks after boot start again.
func BootID() string {
	raw, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(raw))
}
