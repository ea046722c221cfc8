package main

import "testing"

func TestAllocTargetsJudgeTheInProcessEcho(t *testing.T) {
	ts := allocTargets(parseGoBench([]byte("pkg: github.com/open-conduit/open-conduit/jsonrpc\n" +
		"BenchmarkInProcessEcho-2   	   39061	     28806 ns/op	     376 B/op	       8 allocs/op\n")))
	if len(ts) != 2 {
		t.Fatalf("%d targets, want 2: %+v", len(ts), ts)
	}
	if a := ts[0]; a.Value != 8 || !a.Met {
		t.Errorf("allocations: %+v", a)
	}
	if b := ts[1]; b.Value != 376 || !b.Met {
		t.Errorf("bytes: %+v", b)
	}
	worse := allocTargets(parseGoBench([]byte("pkg: github.com/open-conduit/open-conduit/jsonrpc\n" +
		"BenchmarkInProcessEcho-2   	   39061	     28806 ns/op	     1300 B/op	       23 allocs/op\n")))
	if len(worse) != 2 || worse[0].Met || worse[1].Met {
		t.Errorf("as many allocations as before judged met: %+v", worse)
	}
	if ts := allocTargets(parseGoBench([]byte("pkg: x\nBenchmarkOther-2 1 5 ns/op\n"))); len(ts) != 0 {
		t.Errorf("a run without the echo benchmark judged %+v", ts)
	}
}
