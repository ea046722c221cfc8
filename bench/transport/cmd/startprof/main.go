// Command startprof takes a start apart: it starts ours (session.Start to
// the SDK's bench extension, then one echo) and the raw pipe program (spawn
// to its first line back) in turn, many times, and prints the medians of
// each phase of ours as the host's wire tap saw them: the initialize
// request written, configure written behind it, each answer read, Start
// returned, the first echo's request written and its answer read, the call
// returned. Where transportbench says how long a cold start takes, this
// says where it goes. With -against it starts another checkout's extension
// in turn with this one's, for an A/B of a change to the extension's side.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/bench/transport/internal/benchbin"
	"github.com/open-conduit/open-conduit/bench/transport/workload"
	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/session"
)

// frames records when each line of one start crossed the wire, from the
// moment Start was called.
type frames struct {
	t0 time.Time
	at []time.Duration
}

func (f *frames) Observe(bool, []byte) { f.at = append(f.at, time.Since(f.t0)) }

// handshake names the lines of a start, in the order they cross: the host
// writes configure right behind initialize.
var handshake = []string{"initialize written", "configure written", "initialize answered", "configure answered"}

// subject is one extension binary started in turn with the others: this
// checkout's, and with -against another checkout's.
type subject struct {
	name   string
	pkg    session.Package
	phases [][]time.Duration
}

func main() {
	n := flag.Int("n", 200, "starts of each")
	against := flag.String("against", "", "another checkout's bench/transport `directory`: its bench extension is started in turn with this one's, for an A/B of a change")
	flag.Parse()
	work, err := os.MkdirTemp("", "startprof-")
	check(err)
	removeWork = func() { os.RemoveAll(work) }
	defer removeWork()
	pipe := build(work, "", "./cmd/pipe-echo", "pipe-echo", "pipe-echo")
	subjects := []*subject{{name: "ours"}}
	if *against != "" {
		subjects = append(subjects, &subject{name: "ours at " + *against})
	}
	echo, err := json.Marshal(workload.Echo{Text: workload.EchoText})
	check(err)

	names := append(slices.Clone(handshake), "Start returned", "echo written", "echo's answer read", "first echo answered")
	for i, sub := range subjects {
		dir := ""
		if i > 0 {
			dir = *against
		}
		ext := build(work, dir, "./cmd/ours-ext", fmt.Sprintf("ours-%d", i), "bench-extension")
		sub.pkg, err = benchbin.Package(ext)
		check(err)
		sub.phases = make([][]time.Duration, len(names))
	}
	var pipes []time.Duration
	for i := range *n {
		// Each in turn, the order reversed every round, so neither always
		// follows the other's stop.
		for j := range subjects {
			if i%2 == 1 {
				j = len(subjects) - 1 - j
			}
			start(subjects[j], echo)
		}
		pipes = append(pipes, pipeStart(pipe))
	}
	for _, sub := range subjects {
		fmt.Printf("%s, from session.Start (medians of %d):\n", sub.name, *n)
		for i, name := range names {
			fmt.Printf("  %-22s %8.0f µs\n", name, p50(sub.phases[i]))
		}
	}
	fmt.Printf("raw pipe, spawn to its first line back: %.0f µs\n", p50(pipes))
	for _, sub := range subjects {
		fmt.Printf("%s / raw pipe: %.2f×\n", sub.name, p50(sub.phases[len(names)-1])/p50(pipes))
	}
}

// start starts sub's extension, sends one echo and records when each line
// crossed.
func start(sub *subject, echo []byte) {
	ctx := context.Background()
	tap := &frames{t0: time.Now()}
	s, err := session.Start(ctx, sub.pkg, session.Options{
		Host:     jsonrpc.NewTable(),
		HostInfo: protocol.HostInfo{Name: "startprof", Version: "1"},
		Backoff:  session.Backoff{Min: time.Hour},
		Observer: tap,
	})
	check(err)
	started := time.Since(tap.t0)
	var res protocol.OperationCallResult
	check(s.Call(ctx, protocol.MethodOperationCall, protocol.OperationCallParams{
		Operation: "bench.echo", Input: protocol.Payload{Data: echo},
	}, &res))
	answered := time.Since(tap.t0)
	// The handshake's four lines, then the echo's request and answer.
	if len(tap.at) < len(handshake)+2 {
		check(fmt.Errorf("the tap saw %d lines, want the handshake's and the echo's", len(tap.at)))
	}
	at := append(slices.Clone(tap.at[:len(handshake)]), started, tap.at[len(handshake)], tap.at[len(handshake)+1], answered)
	for i := range at {
		sub.phases[i] = append(sub.phases[i], at[i])
	}
	_ = s.Close(ctx)
}

// pipeStart starts the raw pipe program and times it to its first echo.
func pipeStart(bin string) time.Duration {
	t := time.Now()
	c := exec.Command(bin)
	in, err := c.StdinPipe()
	check(err)
	out, err := c.StdoutPipe()
	check(err)
	check(c.Start())
	_, err = in.Write([]byte("hello\n"))
	check(err)
	_, err = bufio.NewReader(out).ReadString('\n')
	check(err)
	d := time.Since(t)
	in.Close()
	check(c.Wait())
	return d
}

// build builds pkg, from dir ("" for this checkout), to work/sub/name.
func build(work, dir, pkg, sub, name string) string {
	out := filepath.Join(work, sub, name)
	check(benchbin.BuildIn(dir, out, pkg))
	return out
}

func p50(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2].Nanoseconds()) / 1e3
}

// removeWork removes the run's build directory; check calls it before
// exiting, since os.Exit runs no deferred call.
var removeWork = func() {}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "startprof:", err)
		removeWork()
		os.Exit(1)
	}
}
