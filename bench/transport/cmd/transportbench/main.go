// Command transportbench runs the seed's transport comparison on this
// machine, in one run: the same workload over Open Conduit's own transport
// (the real session, jsonrpc and sdk packages), go.lsp.dev/jsonrpc2 alone
// (the library ours is built on, without our layers), hashicorp/go-plugin
// over gRPC, and a raw pipe ping-pong (the physical limit, and with
// encoding/json the encoding floor). Every figure is the median of several
// rounds, the transports interleaved within each round, so a noisy
// neighbour slows them alike. It writes docs/benchmarks.json and the
// transport part of docs/benchmarks.md.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/open-conduit/open-conduit/bench/transport/internal/benchbin"
)

// config is the size of one run.
type config struct {
	rounds     int
	echoes     int
	callbacks  int
	artifact   int
	concurrent int
	perWorker  int
	cancels    int
	crashes    int
	// starts is how many more cold starts and warm restarts each transport
	// makes a round besides its round's own, taking turns with the others:
	// a start is one sample of a few milliseconds, and one a round left the
	// ratios between transports to whatever else the machine did then. At
	// six a round (35 samples a run) the warm restart's ratio to the pipe
	// program still moved by a tenth between runs; at twenty (105) the
	// medians move less, for about ten seconds more a run.
	starts int
}

var full = config{rounds: 5, echoes: 2000, callbacks: 1000, artifact: 16 << 20, concurrent: 32, perWorker: 50, cancels: 20, crashes: 3, starts: 20}
var short = config{rounds: 1, echoes: 100, callbacks: 50, artifact: 1 << 20, concurrent: 4, perWorker: 10, cancels: 3, crashes: 1, starts: 1}

// figures are one transport's results: name → samples.
type figures map[string][]float64

func (f figures) add(name string, v float64) { f[name] = append(f[name], v) }

func main() {
	var (
		isShort  = flag.Bool("short", false, "a quick run that only proves the harness works (CI); the numbers mean nothing")
		jsonOut  = flag.String("json", "", "write the figures as JSON to this file")
		mdOut    = flag.String("md", "", "write the markdown table to this file")
		goBench  = flag.String("gobench", "", "a file of `go test -bench` output to include as the engine and store section")
		notes    = flag.String("notes", "", "a markdown file appended to the table (how to read it, findings)")
		rounds   = flag.Int("rounds", 0, "rounds (default 5, or 1 with -short)")
		keepWork = flag.Bool("keep", false, "keep the build directory")
	)
	flag.Parse()
	// go-plugin logs broker teardown through the standard logger.
	log.SetOutput(io.Discard)
	cfg := full
	if *isShort {
		cfg = short
	}
	if *rounds > 0 {
		cfg.rounds = *rounds
	}
	work, err := os.MkdirTemp("", "transportbench-")
	check(err)
	// go-plugin makes unix sockets in the temporary directory, the plugin
	// process for its server and this one for its broker's listeners, and
	// leaves some behind: they go in the run's directory, removed with it
	// (the processes started inherit it).
	check(os.Setenv("TMPDIR", work))
	if !*keepWork {
		removeWork = func() { os.RemoveAll(work) }
		defer removeWork()
	}
	bins, err := build(work)
	check(err)

	results := map[string]figures{"ours": {}, "library": {}, "goplugin": {}, "pipe": {}}
	runners := []runner{
		&oursRunner{bins: bins, work: work, cfg: cfg},
		&libraryRunner{bins: bins, work: work, cfg: cfg},
		&pluginRunner{bins: bins, work: work, cfg: cfg},
		&pipeRunner{bins: bins, work: work, cfg: cfg},
	}
	start := time.Now()
	for round := 0; round < cfg.rounds; round++ {
		fmt.Fprintf(os.Stderr, "round %d/%d: starts\n", round+1, cfg.rounds)
		for k := range cfg.starts {
			for i := range runners {
				r := runners[(i+k)%len(runners)]
				check(r.starts(results[r.name()]))
			}
		}
		// Rotate the order each round so none always runs first.
		for i := range runners {
			r := runners[(i+round)%len(runners)]
			fmt.Fprintf(os.Stderr, "round %d/%d: %s\n", round+1, cfg.rounds, r.name())
			check(runRound(r, results[r.name()], os.Stderr))
		}
	}
	for name, b := range bins.sizes {
		t, kind, _ := strings.Cut(name, "/")
		results[t].add(kind, float64(b))
	}
	rep := newReport(cfg, results, time.Since(start))
	if *goBench != "" {
		gob, err := os.ReadFile(*goBench)
		check(err)
		rep.GoBench = parseGoBench(gob)
		rep.Targets = append(rep.Targets, storeTargets(rep.GoBench)...)
		rep.Targets = append(rep.Targets, allocTargets(rep.GoBench)...)
	}
	if *jsonOut != "" {
		check(os.WriteFile(*jsonOut, rep.json(), 0o644))
	}
	var notesText []byte
	if *notes != "" {
		notesText, err = os.ReadFile(*notes)
		check(err)
	}
	md := rep.markdown(notesText)
	if *mdOut != "" {
		check(os.WriteFile(*mdOut, md, 0o644))
	} else {
		os.Stdout.Write(md)
	}
}

// runner runs one round of the workload over one transport.
type runner interface {
	name() string
	round(f figures) error
	// starts times one more cold start and warm restart, leaving nothing
	// running.
	starts(f figures) error
}

// runRound runs one round of r into f. A baseline whose round fails runs
// it once more, saying so on log, and the failed attempt's figures are
// dropped: the library's own harness has lost its reader after a release
// about once in twenty full runs, which is no figure of ours and should not
// cost the whole run. A failing round of ours, or a second failure, ends
// the run.
func runRound(r runner, f figures, log io.Writer) error {
	for attempt := 1; ; attempt++ {
		got := figures{}
		err := r.round(got)
		if err == nil {
			for k, v := range got {
				f[k] = append(f[k], v...)
			}
			return nil
		}
		if r.name() == "ours" || attempt == 2 {
			return err
		}
		fmt.Fprintf(log, "%s: its round failed (%v); running the round once more\n", r.name(), err)
	}
}

// binaries are the built extensions and their sizes.
type binaries struct {
	ours, library, plugin, pipe string
	sizes                       map[string]int64
}

// build builds each extension binary, default and stripped.
func build(dir string) (binaries, error) {
	b := binaries{sizes: map[string]int64{}}
	type target struct {
		pkg, name string
		out       *string
		key       string
	}
	for _, t := range []target{
		{"./cmd/ours-ext", "bench-extension", &b.ours, "ours"},
		{"./cmd/library-ext", "library-ext", &b.library, "library"},
		{"./cmd/goplugin-ext", "goplugin-ext", &b.plugin, "goplugin"},
		{"./cmd/pipe-echo", "pipe-echo", &b.pipe, "pipe"},
	} {
		out := filepath.Join(dir, t.key, t.name)
		if err := benchbin.Build(out, t.pkg); err != nil {
			return b, err
		}
		*t.out = out
		st, _ := os.Stat(out)
		b.sizes[t.key+"/binary_bytes"] = st.Size()
		stripped := filepath.Join(dir, "stripped-"+t.key)
		if err := benchbin.Build(stripped, t.pkg, "-ldflags=-s -w", "-trimpath"); err != nil {
			return b, err
		}
		st, _ = os.Stat(stripped)
		b.sizes[t.key+"/binary_stripped_bytes"] = st.Size()
	}
	return b, nil
}

// freshCopy copies bin to a new path, so its launch is a first launch.
func freshCopy(bin, dir string) (string, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	d, err := os.MkdirTemp(dir, "fresh-")
	if err != nil {
		return "", err
	}
	out := filepath.Join(d, filepath.Base(bin))
	return out, os.WriteFile(out, data, 0o755)
}

// percentile of durations, in microseconds.
func percentile(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[min(len(s)-1, int(q*float64(len(s))))].Nanoseconds()) / 1e3
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// removeWork removes the run's directory unless -keep asked to keep it;
// check calls it before exiting, since os.Exit runs no deferred call.
var removeWork = func() {}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "transportbench:", err)
		removeWork()
		os.Exit(1)
	}
}
