// Package cpuprof lets a benchmark extension profile itself: when it is
// built with the callprof tag (cmd/callprof builds it so) and
// CALLPROF_CPUPROFILE names a file, Start writes a CPU profile there until
// the returned stop runs. Without the tag Start does nothing and the
// extension carries no profiler, so the binary transportbench measures is
// the SDK's own size, not the SDK's plus runtime/pprof and its gzip.
package cpuprof

// Env names the profile's file.
const Env = "CALLPROF_CPUPROFILE"
