package main

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// goBench is one benchmark line of `go test -bench` output.
type goBench struct {
	// Package is the package path within the module.
	Package string `json:"package"`
	// Name is the benchmark's name without "Benchmark" and without the
	// GOMAXPROCS suffix.
	Name string `json:"name"`
	// Procs is GOMAXPROCS during the run (the name's suffix).
	Procs      int `json:"procs,omitempty"`
	Iterations int `json:"iterations"`
	// Metrics are the line's figures by unit (ns/op, p50-µs, started/s…).
	Metrics map[string]float64 `json:"metrics"`
	// printed is the name as go test printed it and order its figures
	// in their order, for the markdown table.
	printed string
	order   []string
}

var procsSuffix = regexp.MustCompile(`-(\d+)$`)

// parseGoBench reads the benchmark lines of go test -bench output.
func parseGoBench(data []byte) []goBench {
	var out []goBench
	pkg := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "pkg: ") {
			pkg = strings.TrimPrefix(strings.TrimPrefix(line, "pkg: "), "github.com/open-conduit/open-conduit/")
			continue
		}
		f := strings.Fields(line)
		if !strings.HasPrefix(line, "Benchmark") || len(f) < 4 {
			continue
		}
		iters, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		g := goBench{Package: pkg, Iterations: iters, Metrics: map[string]float64{},
			printed: strings.TrimPrefix(f[0], "Benchmark")}
		g.Name = g.printed
		if m := procsSuffix.FindStringSubmatch(g.Name); m != nil {
			g.Procs, _ = strconv.Atoi(m[1])
			g.Name = strings.TrimSuffix(g.Name, m[0])
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			g.Metrics[f[i+1]] = v
			g.order = append(g.order, f[i]+" "+f[i+1])
		}
		out = append(out, g)
	}
	return out
}

// lookup is the metric unit of benchmark name in pkg; false when the run
// has none.
func lookup(gs []goBench, pkg, name, unit string) (float64, bool) {
	for _, g := range gs {
		if g.Package == pkg && g.Name == name {
			v, ok := g.Metrics[unit]
			return v, ok && v > 0
		}
	}
	return 0, false
}

// runningWork is the figures of running Work (issue 11) the engine
// benchmarks measured, and their ratios, as markdown rows; none when the
// run has not got them.
func runningWork(gs []goBench) string {
	type fig struct {
		pkg, name, unit string
	}
	var (
		roundTrip = fig{"host/toolbelt", "ToolbeltOperationRoundTrip/echo", "p50-µs"}
		greet     = fig{"host/toolbelt", "ToolbeltOperationRoundTrip/hello.greet", "p50-µs"}
		inProc    = fig{"host/toolbelt", "ToolbeltHandlerCall", "p50-µs"}
		replay    = fig{"host/toolbelt", "ToolbeltReplay", "p50-µs"}
		echo      = fig{"session", "EchoRoundTrip", "p50-µs"}
		route     = fig{"host/engine", "RouteMatchRoundTrip", "p50-µs"}
		sync      = fig{"pebblekv", "BatchCommitSync", "ns/op"}
		start4    = fig{"host/engine", "AttemptsStarted/concurrency=4", "started/s"}
		done4     = fig{"host/engine", "AttemptsStarted/concurrency=4", "completed/s"}
		startAll  = fig{"host/engine", "AttemptsStarted/concurrency=256", "started/s"}
		doneAll   = fig{"host/engine", "AttemptsStarted/concurrency=256", "completed/s"}
	)
	get := func(f fig) (float64, bool) {
		v, ok := lookup(gs, f.pkg, f.name, f.unit)
		if f.unit == "ns/op" {
			v /= 1000
		}
		return v, ok
	}
	var b strings.Builder
	row := func(label string, f fig, unit string) {
		if v, ok := get(f); ok {
			fmt.Fprintf(&b, "| %s | %s %s |\n", label, num(v), unit)
		}
	}
	ratio := func(label string, a, c fig) {
		av, aok := get(a)
		cv, cok := get(c)
		if aok && cok {
			fmt.Fprintf(&b, "| %s | %.2f× |\n", label, av/cv)
		}
	}
	row("operation.call round trip through the toolbelt, p50 (echo package over pipes)", roundTrip, "µs")
	row("the same with one host callback (hello.greet: a KV update and an Event)", greet, "µs")
	row("the same with the package in process (no pipes)", inProc, "µs")
	row("a retry answered from its replay record", replay, "µs")
	ratio("round trip p50 over the mean synced store commit (pebblekv BatchCommitSync ns/op)", roundTrip, sync)
	ratio("round trip over a retry's replay", roundTrip, replay)
	ratio("round trip over the package in process", roundTrip, inProc)
	ratio("round trip over the router's route.match (engine → package, no socket, no commit)", roundTrip, route)
	ratio("round trip over session's echo across a process boundary", roundTrip, echo)
	row("attempts started per second, concurrency 4 (the default)", start4, "/s")
	row("attempts completed per second, concurrency 4", done4, "/s")
	row("attempts started per second, concurrency 256 (not the limit)", startAll, "/s")
	row("attempts completed per second, concurrency 256", doneAll, "/s")
	ratio("attempts started per second, unbounded over the default", startAll, start4)
	if b.Len() == 0 {
		return ""
	}
	return "| figure | this run |\n| --- | ---: |\n" + b.String()
}
