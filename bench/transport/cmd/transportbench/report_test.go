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
