package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// report is one run's medians, the machine, and the targets judged
// against them.
type report struct {
	Machine    machine                       `json:"machine"`
	Rounds     int                           `json:"rounds"`
	Seconds    float64                       `json:"seconds"`
	Transports map[string]map[string]float64 `json:"transports"`
	Targets    []target                      `json:"targets"`
	// GoBench are the engine and store benchmarks of the same run.
	GoBench []goBench `json:"go_bench,omitempty"`
}

type machine struct {
	Cores int    `json:"cores"`
	CPU   string `json:"cpu"`
	Go    string `json:"go"`
	OS    string `json:"os"`
	Arch  string `json:"arch"`
	Date  string `json:"date"`
	// Load is the 1, 5 and 15-minute load averages as the report was
	// made (Linux): on a shared machine, what else ran meanwhile.
	Load string `json:"load,omitempty"`
}

// target is one of the transport's targets (issue 3's, and issue 13's
// against the library alone), judged on this run's medians.
type target struct {
	Name  string  `json:"name"`
	Want  string  `json:"want"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	Met   bool    `json:"met"`
}

func newReport(cfg config, results map[string]figures, elapsed time.Duration) *report {
	r := &report{
		Machine: machine{
			Cores: runtime.NumCPU(), CPU: cpuModel(), Go: runtime.Version(),
			OS: runtime.GOOS, Arch: runtime.GOARCH, Date: time.Now().UTC().Format(time.RFC3339), Load: loadAverage(),
		},
		Rounds:     cfg.rounds,
		Seconds:    elapsed.Seconds(),
		Transports: map[string]map[string]float64{},
	}
	for t, f := range results {
		r.Transports[t] = map[string]float64{}
		for k, v := range f {
			r.Transports[t][k] = median(v)
		}
	}
	o, l, g, p := r.Transports["ours"], r.Transports["library"], r.Transports["goplugin"], r.Transports["pipe"]
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	add := func(name, want string, v float64, unit string, met bool) {
		r.Targets = append(r.Targets, target{name, want, v, unit, met})
	}
	v := ratio(o["echo_p50_us"], p["json_echo_p50_us"])
	add("echo p50 vs the pipe + encoding/json floor", "≤ 1.5×", v, "×", v > 0 && v <= 1.5)
	v = ratio(o["echo_p50_us"], l["echo_p50_us"])
	add("echo p50: ours over go.lsp.dev/jsonrpc2 alone", "≤ 1.2×", v, "×", v > 0 && v <= 1.2)
	v = ratio(g["echo_p50_us"], o["echo_p50_us"])
	add("echo p50: go-plugin's over ours", "≥ 5×", v, "×", v >= 5)
	v = ratio(o["echo_p99_us"], o["echo_p50_us"])
	add("echo p99 vs its own p50", "≤ 3×", v, "×", v > 0 && v <= 3)
	v = ratio(o["callback_p50_us"], o["echo_p50_us"])
	add("host callback vs an echo", "≤ 1.5×", v, "×", v > 0 && v <= 1.5)
	v = ratio(o["cancel_seen_us"], o["echo_p50_us"])
	add("cancel seen by the extension vs an echo", "≤ 3×", v, "×", v > 0 && v <= 3)
	v = ratio(o["artifact_256k_mibs"], g["artifact_256k_mibs"])
	add("16 MiB in 256 KiB chunks vs go-plugin", "≥ 1×", v, "×", v >= 1)
	v = ratio(o["artifact_64k_mibs"], g["artifact_64k_mibs"])
	add("16 MiB in 64 KiB chunks vs go-plugin", "≥ 1×", v, "×", v >= 1)
	v = ratio(o["concurrent_calls_per_s"], g["concurrent_calls_per_s"])
	add("concurrent calls/s vs go-plugin", "≥ 4×", v, "×", v >= 4)
	v = ratio(o["concurrent_calls_per_s"], l["concurrent_calls_per_s"])
	add("concurrent calls/s vs go.lsp.dev/jsonrpc2 alone", "≥ 0.8×", v, "×", v >= 0.8)
	add("cold start", "≤ 5 ms", o["cold_start_ms"], "ms", o["cold_start_ms"] <= 5)
	v = ratio(o["cold_start_ms"], p["cold_start_ms"])
	add("cold start vs the raw pipe program", "≤ 1.5×", v, "×", v > 0 && v <= 1.5)
	v = ratio(o["cold_start_ms"], g["cold_start_ms"])
	add("cold start vs go-plugin", "≤ 0.5×", v, "×", v > 0 && v <= 0.5)
	add("warm restart", "≤ 5 ms", o["warm_restart_ms"], "ms", o["warm_restart_ms"] <= 5)
	v = ratio(o["warm_restart_ms"], p["warm_restart_ms"])
	add("warm restart vs the raw pipe program", "≤ 1.5×", v, "×", v > 0 && v <= 1.5)
	v = ratio(o["warm_restart_ms"], g["warm_restart_ms"])
	add("warm restart vs go-plugin", "≤ 0.5×", v, "×", v > 0 && v <= 0.5)
	add("crash detected", "≤ 1 ms", o["crash_detected_ms"], "ms", o["crash_detected_ms"] <= 1)
	v = ratio(o["crash_detected_ms"], g["crash_detected_ms"])
	add("crash detected vs go-plugin", "≤ 1×", v, "×", v > 0 && v <= 1)
	add("SDK-only extension binary, stripped", "≤ 4 MiB", o["binary_stripped_bytes"]/(1<<20), "MiB", o["binary_stripped_bytes"] <= 4<<20)
	return r
}

func (r *report) json() []byte {
	b, _ := json.MarshalIndent(r, "", "  ")
	return append(b, '\n')
}

// rows are the figures in the order the table shows them.
var rows = []struct {
	key, label, unit string
	higherBetter     bool
}{
	{"cold_start_ms", "cold start (fresh binary → first answer)", "ms", false},
	{"warm_restart_ms", "warm restart", "ms", false},
	{"version_refusal_ms", "version-mismatch refusal", "ms", false},
	{"echo_p50_us", "echo p50 (2,000 sequential)", "µs", false},
	{"echo_p99_us", "echo p99", "µs", false},
	{"json_echo_p50_us", "echo p50 with encoding/json on both sides", "µs", false},
	{"concurrent_calls_per_s", "concurrent echoes (32 × 50)", "calls/s", true},
	{"callback_p50_us", "host callback while serving (timed in the extension)", "µs", false},
	{"artifact_256k_mibs", "16 MiB in acknowledged 256 KiB chunks", "MiB/s", true},
	{"artifact_64k_mibs", "16 MiB in acknowledged 64 KiB chunks", "MiB/s", true},
	{"cancel_seen_us", "cancel seen by the extension", "µs", false},
	{"crash_detected_ms", "crash detected by the host", "ms", false},
	{"binary_bytes", "extension binary", "MiB", false},
	{"binary_stripped_bytes", "extension binary, stripped", "MiB", false},
}

func (r *report) markdown(notes []byte) []byte {
	var b bytes.Buffer
	m := r.Machine
	fmt.Fprintf(&b, "# Benchmarks\n\nWritten by `make bench` from one run on %s; do not edit by hand.\n\n", m.Date)
	fmt.Fprintf(&b, "- Machine: %d cores, %s, %s/%s\n", m.Cores, m.CPU, m.OS, m.Arch)
	if m.Load != "" {
		fmt.Fprintf(&b, "- Load average (1, 5, 15 minutes) at the end of the run: %s (the go test benchmarks ran in the minutes before it)\n", m.Load)
	}
	fmt.Fprintf(&b, "- Go: %s\n- Rounds: %d (each figure is the median; transports interleaved in each round); the run took %.0f s\n\n",
		m.Go, r.Rounds, r.Seconds)
	b.WriteString("## Transport: ours, the library alone, go-plugin and the pipe, side by side\n\n")
	b.WriteString("The two ratio columns read the same way: above 1× ours is ahead, below 1× behind.\n\n")
	b.WriteString("| figure | ours | go.lsp.dev/jsonrpc2 alone | go-plugin (gRPC) | raw pipe | ours vs the library | ours vs go-plugin |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	o, l, g, p := r.Transports["ours"], r.Transports["library"], r.Transports["goplugin"], r.Transports["pipe"]
	for _, row := range rows {
		cell := func(t map[string]float64) string {
			v, ok := t[row.key]
			if !ok {
				return "—"
			}
			if row.unit == "MiB" {
				v /= 1 << 20
			}
			return fmt.Sprintf("%s %s", num(v), row.unit)
		}
		// better is how many times ours is ahead of t on this row.
		better := func(t map[string]float64) string {
			ov, tv := o[row.key], t[row.key]
			if ov <= 0 || tv <= 0 {
				return "—"
			}
			if row.higherBetter {
				return fmt.Sprintf("%.2f×", ov/tv)
			}
			return fmt.Sprintf("%.2f×", tv/ov)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", row.label, cell(o), cell(l), cell(g), cell(p), better(l), better(g))
	}
	b.WriteString("\n## Targets (issues 3 and 13), judged on this run\n\n| target | wanted | this run | met |\n| --- | --- | ---: | --- |\n")
	for _, t := range r.Targets {
		met := "no"
		if t.Met {
			met = "yes"
		}
		fmt.Fprintf(&b, "| %s | %s | %s %s | %s |\n", t.Name, t.Want, judgedNum(t.Value), t.Unit, met)
	}
	if len(r.GoBench) > 0 {
		b.WriteString("\n## Engine and store (go test -bench, same run)\n\n| package | benchmark | iterations | results |\n| --- | --- | ---: | --- |\n")
		for _, g := range r.GoBench {
			fmt.Fprintf(&b, "| %s | %s | %d | %s |\n", g.Package, g.printed, g.Iterations, strings.Join(g.order, ", "))
		}
		if rw := runningWork(r.GoBench); rw != "" {
			b.WriteString("\n## Running Work (issue 11), medians and ratios of this run\n\n")
			b.WriteString(rw)
		}
		if sp := storePath(r.GoBench); sp != "" {
			b.WriteString("\n## The store path (issue 13): kv.commit from extensions against raw Pebble, interleaved in one run\n\n")
			b.WriteString(sp)
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n")
		b.Write(notes)
	}
	return b.Bytes()
}

func num(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// judgedNum is a judged figure as the targets table prints it: a small one
// with three decimals, so a value just short of its bound (0.7958 against
// ≥ 0.8) never prints as the bound beside a "no".
func judgedNum(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.3f", v)
	}
	return num(v)
}

// cpuModel reads the CPU's model name on Linux.
func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "model name") {
			if _, v, ok := strings.Cut(line, ":"); ok {
				return strings.TrimSpace(v)
			}
		}
	}
	return "unknown CPU"
}

// loadAverage is the 1, 5 and 15-minute load averages on Linux, "" where
// the system does not say.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], ", ")
}
