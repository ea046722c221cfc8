package main

import (
	"strings"
	"testing"
	"time"
)

// oneRun is one sample of each figure the library targets read, per
// transport.
func oneRun() map[string]figures {
	return map[string]figures{
		"ours":     {"echo_p50_us": {120}, "concurrent_calls_per_s": {20000}, "artifact_256k_mibs": {40}},
		"library":  {"echo_p50_us": {100}, "concurrent_calls_per_s": {30000}, "artifact_256k_mibs": {80}},
		"goplugin": {"echo_p50_us": {300}, "concurrent_calls_per_s": {16000}},
		"pipe":     {"echo_p50_us": {10}, "json_echo_p50_us": {30}},
	}
}

func TestReportJudgesOursAgainstTheLibraryAlone(t *testing.T) {
	r := newReport(short, oneRun(), time.Second)
	got := map[string]target{}
	for _, tg := range r.Targets {
		got[tg.Name] = tg
	}
	echo := got["echo p50: ours over go.lsp.dev/jsonrpc2 alone"]
	if echo.Value != 1.2 || !echo.Met || echo.Want != "≤ 1.2×" {
		t.Errorf("echo target: %+v", echo)
	}
	conc := got["concurrent calls/s vs go.lsp.dev/jsonrpc2 alone"]
	if conc.Value < 0.66 || conc.Value > 0.67 || conc.Met || conc.Want != "≥ 0.8×" {
		t.Errorf("concurrency target: %+v", conc)
	}
	if lib := r.Transports["library"]; lib["echo_p50_us"] != 100 {
		t.Errorf("transports.library: %v", lib)
	}
}

// TestReportJudgesStartsAndChunksAgainstThePipeAndGoPlugin: issue 13's
// start targets read the raw pipe program's starts, its artifact targets
// both chunk sizes, and a figure missing on either side is never met.
func TestReportJudgesStartsAndChunksAgainstThePipeAndGoPlugin(t *testing.T) {
	run := map[string]figures{
		"ours":     {"cold_start_ms": {3}, "warm_restart_ms": {2}, "artifact_64k_mibs": {150}, "crash_detected_ms": {0.6}},
		"goplugin": {"cold_start_ms": {8}, "warm_restart_ms": {7}, "artifact_64k_mibs": {100}},
		"pipe":     {"cold_start_ms": {1.5}, "warm_restart_ms": {1.5}},
	}
	got := map[string]target{}
	for _, tg := range newReport(short, run, time.Second).Targets {
		got[tg.Name] = tg
	}
	for name, want := range map[string]struct {
		value float64
		met   bool
	}{
		"cold start vs the raw pipe program":   {2, false},
		"warm restart vs the raw pipe program": {4.0 / 3, true},
		"16 MiB in 64 KiB chunks vs go-plugin": {1.5, true},
		// go-plugin's crash figure is missing: not met, whatever ours is.
		"crash detected vs go-plugin": {0, false},
	} {
		tg, ok := got[name]
		if !ok {
			t.Errorf("no target %q", name)
			continue
		}
		if tg.Value < want.value-0.001 || tg.Value > want.value+0.001 || tg.Met != want.met {
			t.Errorf("%s: %+v, want value %.2f met %v", name, tg, want.value, want.met)
		}
	}
}

func TestReportShowsTheLibraryColumnAndBothRatios(t *testing.T) {
	md := string(newReport(short, oneRun(), time.Second).markdown(nil))
	for _, want := range []string{
		"| figure | ours | go.lsp.dev/jsonrpc2 alone | go-plugin (gRPC) | raw pipe | ours vs the library | ours vs go-plugin |",
		// Lower is better: the other's time over ours.
		"| echo p50 (2,000 sequential) | 120.0 µs | 100.0 µs | 300.0 µs | 10.0 µs | 0.83× | 2.50× |",
		// Higher is better: ours over the other's.
		"| concurrent echoes (32 × 50) | 20000 calls/s | 30000 calls/s | 16000 calls/s | — | 0.67× | 1.25× |",
		// A figure a transport has not got is a dash, and so is its ratio.
		"| 16 MiB in acknowledged 256 KiB chunks | 40.0 MiB/s | 80.0 MiB/s | — | — | 0.50× | — |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in\n%s", want, md)
		}
	}
}

// TestTargetsTablePrintsAFigureJustShortWithItsThirdDecimal: 0.7958
// against ≥ 0.8 prints as 0.796 beside its "no", never as 0.80.
func TestTargetsTablePrintsAFigureJustShortWithItsThirdDecimal(t *testing.T) {
	run := oneRun()
	run["ours"]["concurrent_calls_per_s"] = []float64{23874}
	md := string(newReport(short, run, time.Second).markdown(nil))
	if want := "| concurrent calls/s vs go.lsp.dev/jsonrpc2 alone | ≥ 0.8× | 0.796 × | no |"; !strings.Contains(md, want) {
		t.Errorf("missing %q in\n%s", want, md)
	}
	if strings.Contains(md, "| 0.80 × | no |") {
		t.Errorf("a figure short of its bound printed as the bound:\n%s", md)
	}
}
