//go:build !linux

package session

// Reap finds processes through /proc, which this platform does not have:
// it kills nothing, and what an extension started outside its process
// group is beyond the host here. Processes in the group still die with it.
func Reap(run string, keep func(pid int) bool) ([]int, error) { return nil, nil }

func reapMarker(value string, keep func(pid int) bool) {}

// LaunchOf finds no marker where there is no /proc.
func LaunchOf(pid int) (run, name string, ok bool) { return "", "", false }
