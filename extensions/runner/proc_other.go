//go:build !linux

package runner

import "errors"

// procInfo is what the system says of one process.
type procInfo struct {
	state byte
	pgrp  int
	start uint64
}

func (p procInfo) dead() bool { return p.state == 'Z' || p.state == 'X' }

var errNoProcess = errors.New("no such process")

// errNoProc: the runner tells a job from a later process with the same
// pid by its start time in /proc, which only Linux has.
var errNoProc = errors.New("the runner needs Linux's /proc to identify its jobs")

func readProc(int) (procInfo, error)  { return procInfo{}, errNoProc }
func groupMembers(int) ([]int, error) { return nil, errNoProc }
func bootID() string                  { return "" }
