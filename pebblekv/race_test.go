//go:build race

package pebblekv

// raceEnabled says the race detector is on, which slows every child process
// of TestDurabilityAfterKill9 several times over.
const raceEnabled = true
