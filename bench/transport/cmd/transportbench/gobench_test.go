package main

import (
	"strings"
	"testing"
)

const sampleGoBench = `goos: linux
pkg: github.com/open-conduit/open-conduit/pebblekv
BenchmarkBatchCommitSync-2   	   14223	    165275 ns/op
pkg: github.com/open-conduit/open-conduit/host/toolbelt
BenchmarkToolbeltHandlerCall-2          	    2859	    737193 ns/op	       580.2 p50-µs
BenchmarkToolbeltReplay-2               	   16362	    146994 ns/op	       104.7 p50-µs
BenchmarkToolbeltOperationRoundTrip/echo-2         	    2606	    909562 ns/op	       703.0 p50-µs
pkg: github.com/open-conduit/open-conduit/host/engine
BenchmarkAttemptsStarted/concurrency=4-2         	    1720	   1824271 ns/op	       550.7 completed/s	       558.6 started/s
BenchmarkAttemptsStarted/concurrency=256-2       	    1792	   1361301 ns/op	       723.4 completed/s	       727.4 started/s
PASS
ok  	github.com/open-conduit/open-conduit/host/engine	6.131s
`

func TestParseGoBenchNamesPackagesProcsAndMetrics(t *testing.T) {
	gs := parseGoBench([]byte(sampleGoBench))
	if len(gs) != 6 {
		t.Fatalf("%d benchmarks, want 6: %+v", len(gs), gs)
	}
	g := gs[4]
	if g.Package != "host/engine" || g.Name != "AttemptsStarted/concurrency=4" || g.Procs != 2 || g.Iterations != 1720 ||
		g.Metrics["started/s"] != 558.6 || g.Metrics["completed/s"] != 550.7 || g.Metrics["ns/op"] != 1824271 {
		t.Fatalf("%+v", g)
	}
	if v, ok := lookup(gs, "host/toolbelt", "ToolbeltReplay", "p50-µs"); !ok || v != 104.7 {
		t.Fatalf("lookup: %v %v", v, ok)
	}
	if _, ok := lookup(gs, "host/toolbelt", "ToolbeltReplay", "started/s"); ok {
		t.Fatal("lookup found a metric the benchmark has not got")
	}
}

func TestRunningWorkQuotesFiguresAndRatiosOfTheRun(t *testing.T) {
	rw := runningWork(parseGoBench([]byte(sampleGoBench)))
	for _, want := range []string{
		"| operation.call round trip through the toolbelt, p50 (echo package over pipes) | 703.0 µs |",
		"| round trip p50 over the mean synced store commit (pebblekv BatchCommitSync ns/op) | 4.25× |",
		"| round trip over a retry's replay | 6.71× |",
		"| attempts started per second, concurrency 256 (not the limit) | 727.4 /s |",
		"| attempts started per second, unbounded over the default | 1.30× |",
	} {
		if !strings.Contains(rw, want) {
			t.Errorf("missing %q in\n%s", want, rw)
		}
	}
	// A figure the run has not got is left out, with its ratios.
	if strings.Contains(rw, "hello.greet") || strings.Contains(rw, "route.match") {
		t.Errorf("rows of figures the run has not got:\n%s", rw)
	}
	if got := runningWork(parseGoBench([]byte("pkg: x\nBenchmarkOther-2 1 5 ns/op\n"))); got != "" {
		t.Errorf("a run without the figures has the section:\n%s", got)
	}
}
