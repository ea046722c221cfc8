//go:build !callprof

package cpuprof

// Start does nothing: this build has no profiler (build with -tags
// callprof, as cmd/callprof does, for one).
func Start() (stop func()) { return func() {} }
