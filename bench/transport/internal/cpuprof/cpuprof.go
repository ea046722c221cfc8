// Package cpuprof lets a benchmark extension profile itself: when
// CALLPROF_CPUPROFILE names a file, Start writes a CPU profile there until
// the returned stop runs. The host passes the variable (cmd/callprof).
package cpuprof

import (
	"os"
	"runtime/pprof"
)

// Env names the profile's file.
const Env = "CALLPROF_CPUPROFILE"

// Start begins profiling when Env is set, and returns what ends it.
func Start() (stop func()) {
	path := os.Getenv(Env)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		return func() {}
	}
	if pprof.StartCPUProfile(f) != nil {
		f.Close()
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}
