// Command report turns `go test -bench` output (stdin) into the markdown of
// docs/benchmarks.md, with the machine's core count, CPU, Go version and the
// date, so every figure in that file comes from one run of `make bench`.
package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// row is one benchmark result line.
type row struct {
	pkg     string
	name    string
	n       string
	metrics []string
}

func main() {
	var rows []row
	pkg := ""
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "pkg: ") {
			pkg = strings.TrimPrefix(line, "pkg: ")
			continue
		}
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		r := row{pkg: pkg, name: strings.TrimPrefix(f[0], "Benchmark"), n: f[1]}
		for i := 2; i+1 < len(f); i += 2 {
			r.metrics = append(r.metrics, f[i]+" "+f[i+1])
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		fmt.Fprintln(os.Stderr, "report: no benchmark lines on stdin")
		os.Exit(1)
	}
	fmt.Println("# Benchmarks")
	fmt.Println()
	fmt.Println("Written by `make bench` from one run; do not edit by hand.")
	fmt.Println()
	fmt.Printf("- Date: %s\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Printf("- Machine: %d cores, %s, %s/%s\n", runtime.NumCPU(), cpuModel(), runtime.GOOS, runtime.GOARCH)
	fmt.Printf("- Go: %s\n", runtime.Version())
	fmt.Println()
	fmt.Println("| package | benchmark | iterations | results |")
	fmt.Println("| --- | --- | --- | --- |")
	for _, r := range rows {
		fmt.Printf("| %s | %s | %s | %s |\n", strings.TrimPrefix(r.pkg, "github.com/open-conduit/open-conduit/"), r.name, r.n, strings.Join(r.metrics, ", "))
	}
	if notes, err := os.ReadFile("docs/benchmarks-notes.md"); err == nil {
		fmt.Println()
		fmt.Print(string(notes))
	}
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
