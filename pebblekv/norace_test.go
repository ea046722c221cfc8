//go:build !race

package pebblekv

// raceEnabled says the race detector is on.
const raceEnabled = false
