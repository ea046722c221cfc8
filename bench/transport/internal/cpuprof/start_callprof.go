//go:build callprof

package cpuprof

import (
	"os"
	"runtime/pprof"
)

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
