// Command callprof takes the call path apart: it runs only the echo
// workloads (sequential, or callers at once) over ours and over the library
// alone, or our 16 MiB uploads, and reports per call what each side spent:
// CPU time, context switches and, with -profile, a CPU profile of the host
// side here and of the extension side (the extensions read
// CALLPROF_CPUPROFILE). Where transportbench says how fast, this says where
// the time goes.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/open-conduit/open-conduit/bench/transport/internal/benchbin"
	"github.com/open-conduit/open-conduit/bench/transport/internal/cpuprof"
	"github.com/open-conduit/open-conduit/bench/transport/library"
	"github.com/open-conduit/open-conduit/bench/transport/workload"
	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/session"
)

// profileEnv names the file an extension writes its CPU profile to.
const profileEnv = cpuprof.Env

func main() {
	var (
		mode    = flag.String("mode", "concurrent", "concurrent, echo, or upload (ours only: 16 MiB artifacts, a call each)")
		which   = flag.String("which", "ours,library", "transports, in order")
		workers = flag.Int("workers", 32, "callers at once (concurrent)")
		per     = flag.Int("per", 50, "calls per caller per batch (concurrent)")
		batches = flag.Int("batches", 40, "batches of workers × per (concurrent)")
		echoes  = flag.Int("echoes", 5000, "sequential echoes (echo), or uploads (upload)")
		chunk   = flag.Int("chunk", 256<<10, "chunk bytes (upload)")
		profile = flag.String("profile", "", "a directory for host-NAME.pprof and ext-NAME.pprof")
	)
	flag.Parse()
	work, err := os.MkdirTemp("", "callprof-")
	check(err)
	removeWork = func() { os.RemoveAll(work) }
	defer removeWork()
	for _, name := range strings.Split(*which, ",") {
		var t transport
		switch name {
		case "ours":
			t, err = startOurs(work, *profile)
		case "library":
			t, err = startLibrary(work, *profile)
		default:
			err = fmt.Errorf("unknown transport %q", name)
		}
		check(err)
		for i := 0; i < 500; i++ {
			check(t.echo())
		}
		var stop func()
		if *profile != "" {
			f, err := os.Create(filepath.Join(*profile, "host-"+name+".pprof"))
			check(err)
			check(pprof.StartCPUProfile(f))
			stop = func() { pprof.StopCPUProfile(); f.Close() }
		}
		selfBefore, childBefore := sample(os.Getpid()), sample(t.pid())
		start := time.Now()
		calls := 0
		var lat []time.Duration
		switch *mode {
		case "upload":
			u, ok := t.(uploader)
			if !ok {
				check(fmt.Errorf("%s has no upload mode", name))
			}
			for i := 0; i < *echoes; i++ {
				check(u.upload(uploadBytes, *chunk))
			}
			calls = *echoes
			fmt.Printf("%-8s upload: %.1f MiB/s in %d-byte chunks\n", name,
				float64(calls*uploadBytes)/(1<<20)/time.Since(start).Seconds(), *chunk)
		case "echo":
			lat = make([]time.Duration, 0, *echoes)
			for i := 0; i < *echoes; i++ {
				t0 := time.Now()
				check(t.echo())
				lat = append(lat, time.Since(t0))
			}
			calls = *echoes
		default:
			for b := 0; b < *batches; b++ {
				var wg sync.WaitGroup
				for w := 0; w < *workers; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; i < *per; i++ {
							check(t.echo())
						}
					}()
				}
				wg.Wait()
			}
			calls = *batches * *workers * *per
		}
		elapsed := time.Since(start)
		selfAfter, childAfter := sample(os.Getpid()), sample(t.pid())
		if stop != nil {
			stop()
		}
		t.close()
		host, ext := selfAfter.minus(selfBefore), childAfter.minus(childBefore)
		fmt.Printf("%-8s %s: %.0f calls/s", name, *mode, float64(calls)/elapsed.Seconds())
		if lat != nil {
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			fmt.Printf(", p50 %.1f µs", float64(lat[len(lat)/2].Nanoseconds())/1e3)
		}
		fmt.Printf("\n  host: %s\n  ext:  %s\n", host.per(calls), ext.per(calls))
	}
	fmt.Fprintf(os.Stderr, "load %s", loadavg())
}

// uploadBytes is the size of one upload: transportbench's artifact.
const uploadBytes = 16 << 20

// uploader is a transport that can also upload an artifact.
type uploader interface {
	upload(bytes, chunk int) error
}

// transport is one running extension and a way to echo through it.
type transport interface {
	echo() error
	pid() int
	close()
}

// --- ours: session and sdk, as transportbench runs them.

type ours struct {
	s  *session.Session
	in workload.Echo
}

func build(work, pkg, name string) (string, error) {
	out := filepath.Join(work, name, name)
	// The tag gives the extension its profiler (internal/cpuprof).
	return out, benchbin.Build(out, pkg, "-tags", "callprof")
}

func startOurs(work, profile string) (transport, error) {
	bin, err := build(work, "./cmd/ours-ext", "bench-extension")
	if err != nil {
		return nil, err
	}
	pkg, err := benchbin.Package(bin)
	if err != nil {
		return nil, err
	}
	environ := os.Environ()
	if profile != "" {
		environ = append(environ, profileEnv+"="+filepath.Join(profile, "ext-ours.pprof"))
	}
	s, err := session.Start(context.Background(), pkg, session.Options{
		Host:       artifactTable(),
		Initialize: protocol.InitializeParams{ArtifactWindow: protocol.ArtifactWindow},
		HostInfo:   protocol.HostInfo{Name: "callprof", Version: "1"},
		Backoff:    session.Backoff{Min: time.Hour},
		Environ:    environ,
		PassEnv:    []string{profileEnv},
	})
	if err != nil {
		return nil, err
	}
	return &ours{s: s, in: workload.Echo{Text: workload.EchoText}}, nil
}

func (o *ours) echo() error {
	out, err := benchbin.Call[workload.Echo](context.Background(), o.s, "bench.echo", o.in)
	if err == nil && out.Text != o.in.Text {
		err = fmt.Errorf("answered %q", out.Text)
	}
	return err
}

func (o *ours) upload(bytes, chunk int) error {
	out, err := benchbin.Call[workload.Uploaded](context.Background(), o.s, "bench.upload", workload.Upload{Bytes: bytes, Chunk: chunk})
	if err == nil && out.Size != int64(bytes) {
		err = fmt.Errorf("uploaded %d bytes of %d", out.Size, bytes)
	}
	return err
}

// artifactTable serves the artifact methods as transportbench's host does:
// each write's offset checked and its bytes counted, not kept.
func artifactTable() *jsonrpc.Table {
	var (
		mu      sync.Mutex
		written int64
		// order holds a chunk that arrives ahead (the host announces the
		// artifact window).
		order protocol.ChunkOrder
	)
	t := jsonrpc.NewTable()
	jsonrpc.Handle(t, protocol.MethodArtifactCreate, func(context.Context, protocol.ArtifactCreateParams) (protocol.ArtifactCreateResult, error) {
		mu.Lock()
		defer mu.Unlock()
		written = 0
		return protocol.ArtifactCreateResult{Artifact: "a1"}, nil
	})
	jsonrpc.Handle(t, protocol.MethodArtifactWrite, func(ctx context.Context, p protocol.ArtifactWriteParams) (protocol.ArtifactWriteResult, error) {
		mu.Lock()
		defer mu.Unlock()
		ahead := func() bool { return p.Offset > written }
		if err := order.Await(ctx, &mu, p, protocol.ArtifactAheadWaitMillis*time.Millisecond, ahead); err != nil {
			return protocol.ArtifactWriteResult{}, err
		}
		if p.Offset != written {
			return protocol.ArtifactWriteResult{}, protocol.Errorf(protocol.ErrConflict, "offset %d, have %d", p.Offset, written)
		}
		written += int64(len(p.Data))
		order.Moved()
		return protocol.ArtifactWriteResult{Size: written}, nil
	})
	jsonrpc.Handle(t, protocol.MethodArtifactCommit, func(context.Context, protocol.ArtifactCommitParams) (protocol.ArtifactCommitResult, error) {
		mu.Lock()
		defer mu.Unlock()
		return protocol.ArtifactCommitResult{Artifact: "a1", Size: written}, nil
	})
	return t
}

func (o *ours) pid() int { return o.s.Status().PID }

func (o *ours) close() { _ = o.s.Close(context.Background()) }

// --- the library alone.

type lib struct {
	cmd  *exec.Cmd
	conn jsonrpc2.Conn
	in   workload.Echo
}

type pipes struct{ out, in *os.File }

func (p pipes) Read(b []byte) (int, error)  { return p.out.Read(b) }
func (p pipes) Write(b []byte) (int, error) { return p.in.Write(b) }
func (p pipes) Close() error                { p.in.Close(); return p.out.Close() }

func startLibrary(work, profile string) (transport, error) {
	bin, err := build(work, "./cmd/library-ext", "library-ext")
	if err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, os.Stderr
	if profile != "" {
		cmd.Env = append(os.Environ(), profileEnv+"="+filepath.Join(profile, "ext-library.pprof"))
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	inR.Close()
	outW.Close()
	conn := jsonrpc2.NewConn(jsonrpc2.NewNDJSONStream(pipes{out: outR, in: inW}))
	conn.Go(context.Background(), jsonrpc2.MethodNotFoundHandler)
	return &lib{cmd: cmd, conn: conn, in: workload.Echo{Text: workload.EchoText}}, nil
}

func (l *lib) echo() error {
	var out workload.Echo
	if _, err := l.conn.Call(context.Background(), library.MethodEcho, l.in, &out); err != nil {
		return err
	}
	if out.Text != l.in.Text {
		return fmt.Errorf("answered %q", out.Text)
	}
	return nil
}

func (l *lib) pid() int { return l.cmd.Process.Pid }

func (l *lib) close() { _ = l.conn.Close(); _ = l.cmd.Wait() }

// --- what a process spent, from /proc.

type usage struct {
	cpu                 time.Duration // user + system
	voluntary, involunt int64         // context switches, all threads
	reads, writes       int64         // read and write syscalls
	threads             int
}

func sample(pid int) usage {
	var u usage
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err == nil {
		// Fields after the command's closing parenthesis; utime and
		// stime are the 12th and 13th of them, in clock ticks (100/s).
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		u.cpu = time.Duration(ut+st) * 10 * time.Millisecond
	}
	if io, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid)); err == nil {
		for _, line := range strings.Split(string(io), "\n") {
			k, v, _ := strings.Cut(line, ": ")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "syscr":
				u.reads = n
			case "syscw":
				u.writes = n
			}
		}
	}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	u.threads = len(tasks)
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			switch k {
			case "voluntary_ctxt_switches":
				u.voluntary += n
			case "nonvoluntary_ctxt_switches":
				u.involunt += n
			}
		}
	}
	return u
}

func (a usage) minus(b usage) usage {
	return usage{cpu: a.cpu - b.cpu, voluntary: a.voluntary - b.voluntary, involunt: a.involunt - b.involunt,
		reads: a.reads - b.reads, writes: a.writes - b.writes, threads: a.threads}
}

func (u usage) per(calls int) string {
	n := float64(calls)
	return fmt.Sprintf("CPU %.1f µs/call, %.2f voluntary + %.2f involuntary switches/call, %.2f reads + %.2f writes/call, %d threads",
		float64(u.cpu.Nanoseconds())/1e3/n, float64(u.voluntary)/n, float64(u.involunt)/n,
		float64(u.reads)/n, float64(u.writes)/n, u.threads)
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return string(b)
}

// removeWork removes the run's build directory; check calls it before
// exiting, since os.Exit runs no deferred call.
var removeWork = func() {}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "callprof:", err)
		removeWork()
		os.Exit(1)
	}
}
