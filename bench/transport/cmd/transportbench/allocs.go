package main

// The allocation targets: an echo across our jsonrpc, both ends in one
// process over real pipes, against the figures before the transport work
// began (23 allocations, 1,220 bytes).
const (
	allocPackage     = "jsonrpc"
	allocBench       = "InProcessEcho"
	allocsBefore     = 23
	allocBytesBefore = 1220
)

// allocTargets judge the in-process echo's allocations and bytes per echo
// against the figures before; none when the run has not got them.
func allocTargets(gs []goBench) []target {
	var ts []target
	if v, ok := lookup(gs, allocPackage, allocBench, "allocs/op"); ok {
		ts = append(ts, target{"allocations per in-process echo (jsonrpc, both ends)", "< 23", v, "allocs", v < allocsBefore})
	}
	if v, ok := lookup(gs, allocPackage, allocBench, "B/op"); ok {
		ts = append(ts, target{"bytes allocated per in-process echo (jsonrpc, both ends)", "< 1,220", v, "B", v < allocBytesBefore})
	}
	return ts
}
