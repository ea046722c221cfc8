package main

import (
	"strings"
	"testing"
)

const sampleStoreBench = `pkg: github.com/open-conduit/open-conduit/host/service
BenchmarkKVCommitVsPebble-2   	    1310	   1426645 ns/op	      1785 ext1-commits/s	       528.3 ext1-p50-µs	         0.5748 ext1/raw1	      6038 ext1nosync-commits/s	       151.7 ext1nosync-p50-µs	      3313 ext8-commits/s	      1809 ext8-p50-µs	         3.100 ext8/ext1	      3105 raw1-commits/s	       296.4 raw1-p50-µs	      2650 raw1idle-commits/s	       351.2 raw1idle-p50-µs	        63.91 raw1idle-gap-µs	      3302 raw1sized-commits/s	       280.1 raw1sized-p50-µs	         0.5406 ext1/raw1sized	     12674 raw8-commits/s	       597.5 raw8-p50-µs
`

func TestStoreTargetsJudgeTheRatiosOfTheRun(t *testing.T) {
	ts := storeTargets(parseGoBench([]byte(sampleStoreBench)))
	if len(ts) != 2 {
		t.Fatalf("%d targets, want 2: %+v", len(ts), ts)
	}
	if one := ts[0]; one.Value != 0.5748 || one.Met || one.Want != "≥ 0.75×" {
		t.Errorf("one writer: %+v", one)
	}
	if eight := ts[1]; eight.Value != 3.1 || !eight.Met || eight.Want != "≥ 3×" {
		t.Errorf("eight writers: %+v", eight)
	}
	if ts := storeTargets(parseGoBench([]byte("pkg: x\nBenchmarkOther-2 1 5 ns/op\n"))); len(ts) != 0 {
		t.Errorf("a run without the store benchmark judged %+v", ts)
	}
}

func TestStorePathShowsEachVariant(t *testing.T) {
	sp := storePath(parseGoBench([]byte(sampleStoreBench)))
	for _, want := range []string{
		"| raw Pebble, one committer (db.Apply, pebble.Sync) | 3105 | 296.4 µs |",
		"| raw Pebble, one committer, its WAL preallocated at full size as the store's is (pebblekv.SizedWALs) | 3302 | 280.1 µs |",
		"| raw1sized's committer pausing before each commit as long as an unsynced kv.commit round trip (commits/s over the commits' own time) | 2650 | 351.2 µs |",
		"| kv.commit from 8 extensions at once (8 processes, 8 sessions, one store) | 3313 | 1809 µs |",
		"| kv.commit from one extension to an unsynced store (all but the fsync) | 6038 | 151.7 µs |",
		"raw1idle's pause before each commit: 63.9 µs,",
		"the store's own work cost): 0.541×.",
	} {
		if !strings.Contains(sp, want) {
			t.Errorf("missing %q in\n%s", want, sp)
		}
	}
	if got := storePath(parseGoBench([]byte("pkg: x\nBenchmarkOther-2 1 5 ns/op\n"))); got != "" {
		t.Errorf("a run without the store benchmark has the section:\n%s", got)
	}
}
