package main

import (
	"fmt"
	"strings"
)

// storeBench is the benchmark that measures the store path (issue 13):
// synced kv.commit from extensions against raw Pebble synced commits, its
// variants interleaved in one run.
const (
	storePackage = "host/service"
	storeBench   = "KVCommitVsPebble"
)

// storeTargets are issue 13's two store-path targets, judged on the
// ratios the benchmark reports; none when the run has not got them.
func storeTargets(gs []goBench) []target {
	var ts []target
	if v, ok := lookup(gs, storePackage, storeBench, "ext1/raw1"); ok {
		ts = append(ts, target{"kv.commit from one extension, synced, vs raw Pebble synced commits (commits/s)", "≥ 0.75×", v, "×", v >= 0.75})
	}
	if v, ok := lookup(gs, storePackage, storeBench, "ext8/ext1"); ok {
		ts = append(ts, target{"kv.commit from 8 extensions at once vs from one (commits/s)", "≥ 3×", v, "×", v >= 3})
	}
	return ts
}

// storePath is the store-path figures of the run as markdown rows; ""
// when the run has not got them.
func storePath(gs []goBench) string {
	var b strings.Builder
	for _, row := range []struct{ label, variant string }{
		{"raw Pebble, one committer (db.Apply, pebble.Sync)", "raw1"},
		{"raw Pebble, one committer, its WAL preallocated at full size as the store's is (pebblekv.SizedWALs)", "raw1sized"},
		{"raw1sized's committer pausing before each commit as long as an unsynced kv.commit round trip (commits/s over the commits' own time)", "raw1idle"},
		{"raw Pebble, 8 committers at once", "raw8"},
		{"kv.commit from one extension (SDK Host.Commit over pipes, synced)", "ext1"},
		{"kv.commit from 8 extensions at once (8 processes, 8 sessions, one store)", "ext8"},
		{"kv.commit from one extension to an unsynced store (all but the fsync)", "ext1nosync"},
	} {
		rate, ok := lookup(gs, storePackage, storeBench, row.variant+"-commits/s")
		p50, ok50 := lookup(gs, storePackage, storeBench, row.variant+"-p50-µs")
		if ok && ok50 {
			fmt.Fprintf(&b, "| %s | %s | %s µs |\n", row.label, num(rate), num(p50))
		}
	}
	if b.Len() == 0 {
		return ""
	}
	table := "| variant | commits/s | p50 |\n| --- | ---: | ---: |\n" + b.String()
	if gap, ok := lookup(gs, storePackage, storeBench, "raw1idle-gap-µs"); ok {
		table += fmt.Sprintf("\nraw1idle's pause before each commit: %s µs, the p50 of unsynced kv.commit round trips timed before the clock started.\n", num(gap))
	}
	if v, ok := lookup(gs, storePackage, storeBench, "ext1/raw1sized"); ok {
		table += fmt.Sprintf("\nOne extension's commits/s over raw1sized's (the same WAL, so what the pipes, the host and the store's own work cost): %s×.\n", judgedNum(v))
	}
	return table
}
