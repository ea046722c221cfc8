package drills

import (
	"bytes"
	"context"

	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/fixtures/probe"
	"github.com/open-conduit/open-conduit/internal/daemontest"
	"github.com/open-conduit/open-conduit/protocol"
)

// The process drills install the probe behind a shell script of the same
// name (the real binary beside it as probe-extension.real), so its
// manifest is unchanged while the script does what an unruly extension
// does: start children that try to outlive it, stop slowly, flood stderr,
// crash in a loop.

// procsChildren starts one child of each kind an extension may leave
// behind: one in its group, one that ignores SIGTERM, one in a session of
// its own. Each records "<kind> <pid>" in children.<launch pid>.
const procsChildren = `L=$$ sh -c 'echo "plain $$" >> children.$L; exec sleep 600' </dev/null >/dev/null 2>&1 &
L=$$ sh -c 'trap "" TERM; echo "ignores-term $$" >> children.$L; exec sleep 600' </dev/null >/dev/null 2>&1 &
L=$$ setsid sh -c 'echo "setsid $$" >> children.$L; exec sleep 600' </dev/null >/dev/null 2>&1 &
`

// procsNeed skips a drill when a tool its script runs is missing.
func procsNeed(t *testing.T, tools ...string) {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("the process drills read /proc, which this machine does not have")
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the drill's extension script needs %s, which is not on PATH", tool)
		}
	}
}

// procsWrap puts the probe behind a script: it records each launch in
// the file launches, runs body, and then the real probe.
func procsWrap(t *testing.T, e *daemontest.Env, body string) {
	t.Helper()
	bin := filepath.Join(e.ProbeDir(), "probe-extension")
	if _, err := os.Stat(bin + ".real"); err != nil {
		if err := os.Rename(bin, bin+".real"); err != nil {
			t.Fatal(err)
		}
	}
	script := "#!/bin/sh\necho \"launch $$\" >> launches\n" + body
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// procsLaunches are the pids of the probe's launches, in order.
func procsLaunches(e *daemontest.Env) []int {
	data, _ := os.ReadFile(filepath.Join(e.ProbeDir(), "launches"))
	var out []int
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "launch "); ok {
			if pid, err := strconv.Atoi(rest); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// procsChildrenOf waits until every child of a launch recorded its pid.
func procsChildrenOf(e *daemontest.Env, launch int) map[string]int {
	got := map[string]int{}
	e.Eventually(fmt.Sprintf("launch %d's children recording their pids", launch), func() bool {
		data, _ := os.ReadFile(filepath.Join(e.ProbeDir(), fmt.Sprintf("children.%d", launch)))
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			kind, pid, ok := strings.Cut(line, " ")
			if n, err := strconv.Atoi(pid); ok && err == nil {
				got[kind] = n
			}
		}
		return len(got) == 3
	})
	return got
}

// procsLatest waits for a launch newer than after (0: any) and returns it
// with its children.
func procsLatest(e *daemontest.Env, after int) (int, map[string]int) {
	var launch int
	e.Eventually("a new launch of the probe", func() bool {
		ls := procsLaunches(e)
		if len(ls) == 0 || ls[len(ls)-1] == after {
			return false
		}
		launch = ls[len(ls)-1]
		return true
	})
	return launch, procsChildrenOf(e, launch)
}

// procsAllGone waits until none of pids runs.
func procsAllGone(e *daemontest.Env, what string, pids map[string]int) {
	e.Eventually(what, func() bool {
		for _, pid := range pids {
			if daemontest.Alive(pid) {
				return false
			}
		}
		return true
	})
}

// procsStillRunning names those of pids that run.
func procsStillRunning(pids map[string]int) []string {
	var out []string
	for kind, pid := range pids {
		if daemontest.Alive(pid) {
			out = append(out, fmt.Sprintf("%s (pid %d)", kind, pid))
		}
	}
	return out
}

// TestDrillKill9LeavesNoPackageChildRunning kills the daemon with SIGKILL
// while the probe's children run (one in its group, one ignoring SIGTERM,
// one in a session of its own), and checks that the next start on the
// same state directory kills every one of them, and none of the new run's.
func TestDrillKill9LeavesNoPackageChildRunning(t *testing.T) {
	procsNeed(t, "sh", "setsid", "sleep")
	iterations := scale(2, 10)
	e := daemontest.New(t, bins)
	procsWrap(t, e, procsChildren+"exec ./probe-extension.real \"$@\"\n")
	e.Start()
	launch, children := procsLatest(e, 0)
	survivedKill, reaped := 0, 0
	for i := 0; i < iterations; i++ {
		e.Kill()
		// The kernel kills the probe itself; its children live on until a
		// daemon reaps them.
		survivedKill += len(procsStillRunning(children))
		e.Start()
		next, nextChildren := procsLatest(e, launch)
		procsAllGone(e, fmt.Sprintf("iteration %d: every child the killed daemon's probe left", i), children)
		reaped += len(children)
		// Negative control: the new run's children are untouched.
		if alive := procsStillRunning(nextChildren); len(alive) != 3 {
			t.Fatalf("iteration %d: the reap killed the new run's children too; running: %v", i, alive)
		}
		launch, children = next, nextChildren
	}
	e.Stop()
	procsAllGone(e, "the last run's children after a clean stop", children)
	report(t, "kill -9 of serve with a package's children running (in its group, ignoring SIGTERM, setsid): %d iterations, %d children outlived the kill, %d reaped by the next start, 0 left", iterations, survivedKill, reaped)
}

// procsSlowStop makes the probe slow to stop: once its stdin closes, the
// script lives on ignoring SIGTERM, so only SIGKILL ends it.
const procsSlowStop = procsChildren + "trap '' TERM\n./probe-extension.real \"$@\"\nexec sleep 600\n"

// TestDrillSecondSignalStopsAtOnce stops a daemon whose package is slow
// to stop: the first SIGTERM waits for it (at most the grace period), a
// second signal kills it at once and serve exits non-zero; either way
// nothing of the package is left running.
func TestDrillSecondSignalStopsAtOnce(t *testing.T) {
	procsNeed(t, "sh", "setsid", "sleep")
	cases := []struct {
		name   string
		second os.Signal
	}{
		{"sigterm_then_sigint", syscall.SIGINT},
		{"sigint_then_sigterm", syscall.SIGTERM},
	}
	if *full {
		// The whole grace period: about ten seconds.
		cases = append(cases, struct {
			name   string
			second os.Signal
		}{"one_sigterm_waits_the_grace_period", nil})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := daemontest.New(t, bins)
			procsWrap(t, e, procsSlowStop)
			e.Start()
			launch, children := procsLatest(e, 0)
			children["the package's process"] = launch
			first := syscall.Signal(syscall.SIGTERM)
			if tc.second == syscall.SIGTERM {
				first = syscall.SIGINT
			}
			cmd := e.Cmd
			begun := time.Now()
			if err := cmd.Process.Signal(first); err != nil {
				t.Fatal(err)
			}
			// The API goes first: once it stopped answering, serve is
			// waiting for the packages.
			e.Eventually("serve to stop answering", func() bool {
				_, err := e.C.Status(context.Background())
				return errors.Is(err, client.ErrNoDaemon)
			})
			var asked time.Time
			if tc.second != nil {
				asked = time.Now()
				if err := cmd.Process.Signal(tc.second); err != nil {
					t.Fatal(err)
				}
			}
			err := cmd.Wait()
			stopped := time.Now()
			e.Cmd = nil
			var ee *exec.ExitError
			switch {
			case tc.second != nil && (!errors.As(err, &ee) || ee.ExitCode() == 0):
				t.Fatalf("serve exited with %v after a second signal; want a non-zero status\n%s", err, e.Log)
			case tc.second != nil && !strings.Contains(e.Log.String(), "second signal"):
				t.Fatalf("serve does not say the second signal killed the packages:\n%s", e.Log)
			case tc.second == nil && err != nil:
				t.Fatalf("serve exited with %v after one SIGTERM\n%s", err, e.Log)
			}
			procsAllGone(e, "the slow package and its children", children)
			if tc.second != nil {
				report(t, "a slow package at stop: the second signal ended the wait in %s (serve exited %d), nothing left running",
					stopped.Sub(asked).Round(time.Millisecond), ee.ExitCode())
			} else {
				report(t, "a slow package at stop: one SIGTERM waited %s, then killed it; serve exited 0, nothing left running",
					stopped.Sub(begun).Round(time.Millisecond))
			}
		})
	}
}

// procsFloodEnv makes the test binary a stderr flood instead of a test
// run: "N:DIR" writes N lines to stderr, one write each, as a logging
// extension does, once DIR/flood.go exists, then creates DIR/flood.done.
const procsFloodEnv = "OC_DRILL_FLOOD"

func init() {
	if spec := os.Getenv(procsFloodEnv); spec != "" {
		os.Exit(procsFlood(spec))
	}
}

func procsFlood(spec string) int {
	count, dir, _ := strings.Cut(spec, ":")
	n, err := strconv.Atoi(count)
	if err != nil {
		return 2
	}
	end := time.Now().Add(daemontest.Deadline)
	for {
		if _, err := os.Stat(filepath.Join(dir, "flood.go")); err == nil {
			break
		}
		if time.Now().After(end) {
			return 1
		}
		time.Sleep(10 * time.Millisecond)
	}
	pad := strings.Repeat("x", 80)
	var line []byte
	for i := 0; i < n; i++ {
		line = fmt.Appendf(line[:0], "flood %08d %s\n", i, pad)
		if _, err := os.Stderr.Write(line); err != nil {
			return 1
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "flood.done"), nil, 0o644); err != nil {
		return 1
	}
	return 0
}

// procsCPU is the CPU time a process used so far (user and system), from
// /proc (clock ticks of 10 ms, as Linux reports them to user space).
func procsCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := bytes.Fields(stat[bytes.LastIndexByte(stat, ')')+1:])
	utime, _ := strconv.ParseInt(string(f[11]), 10, 64)
	stime, _ := strconv.ParseInt(string(f[12]), 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

var procsDropped = regexp.MustCompile(`\[open-conduit\] dropped (\d+) lines`)

// TestDrillStderrFloodCostsTheDaemonLittle has a child of the probe write
// lines to stderr as fast as it can, a write a line, and measures the CPU
// the daemon spent on it: lines over the log's rate are dropped and
// counted, the log stays within its bound, and the daemon and the probe
// go on serving.
func TestDrillStderrFloodCostsTheDaemonLittle(t *testing.T) {
	procsNeed(t, "sh")
	lines := scale(100_000, 1_000_000)
	e := daemontest.New(t, bins)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	procsWrap(t, e, fmt.Sprintf("%s='%d:%s' '%s' </dev/null >/dev/null &\nexec ./probe-extension.real \"$@\"\n", procsFloodEnv, lines, dir, self))
	e.Start()
	pid := e.Cmd.Process.Pid
	cpu0, t0 := procsCPU(t, pid), time.Now()
	if err := os.WriteFile(filepath.Join(dir, "flood.go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e.Eventually("the flood to be written", func() bool {
		_, err := os.Stat(filepath.Join(dir, "flood.done"))
		return err == nil
	})
	cpu, wall := procsCPU(t, pid)-cpu0, time.Since(t0)
	if a := e.HostCall("", protocol.MethodStateSequence, struct{}{}); a.Code != "" {
		t.Fatalf("the probe does not serve after the flood: %s %s", a.Code, a.Message)
	}
	e.Stop()
	data, err := os.ReadFile(filepath.Join(e.State, "logs", "extensions", probe.Name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	dropped := 0
	for _, m := range procsDropped.FindAllSubmatch(data, -1) {
		n, _ := strconv.Atoi(string(m[1]))
		dropped += n
	}
	bytesFlooded := lines * 96
	report(t, "stderr flood of %d lines (%.1f MB, a write a line) in %s: the daemon used %s of CPU (%.0f%% of a core, %.1f ms per MB); the log's last %d KiB count %d dropped lines",
		lines, float64(bytesFlooded)/1e6, wall.Round(time.Millisecond), cpu, 100*cpu.Seconds()/wall.Seconds(),
		float64(cpu.Milliseconds())/(float64(bytesFlooded)/1e6), len(data)>>10, dropped)
	switch {
	case len(data) > 1<<20:
		t.Fatalf("the log is %d bytes, over its 1 MiB bound", len(data))
	case dropped == 0 || dropped > lines:
		t.Fatalf("the log counts %d dropped lines of a %d-line flood; want a count of the lines over the rate", dropped, lines)
	}
}

// TestDrillCallToADownPackageIsUnavailable puts the probe in a loop of
// failing starts until its next restart is far off, and checks what every
// path that calls it answers meanwhile: the operator's call and the
// package's task fail unavailable at once, never wait out their deadline
// for the restart, and never answer a success the package did not give.
func TestDrillCallToADownPackageIsUnavailable(t *testing.T) {
	procsNeed(t, "sh")
	e := daemontest.New(t, bins)
	loop := filepath.Join(e.ProbeDir(), "crashloop")
	procsWrap(t, e, "if [ -e crashloop ]; then echo 'crashing on purpose' >&2; exit 3; fi\nexec ./probe-extension.real \"$@\"\n")
	e.Start()
	if err := os.WriteFile(loop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(e.Extension(probe.Name).PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The backoff doubles with each failed start: wait until the next one
	// is further off than any call may wait for it.
	var down client.Extension
	e.Eventually("the probe's next start to be far off", func() bool {
		down = e.Extension(probe.Name)
		return down.State == "restarting" && time.Until(down.NextRestart) > 8*time.Second
	})
	call := client.CallRequest{Operation: "probe.call", Input: map[string]any{"method": protocol.MethodStateSequence}}
	res, err := e.C.Call(context.Background(), probe.Name, call)
	if err == nil && res.Code == "" {
		t.Fatalf("a call to the down probe answered success: %+v", res)
	}
	if code := procsCode(res, err); code != protocol.CodeUnavailable {
		t.Fatalf("a call to the down probe: code %q (%v %+v), want unavailable", code, err, res)
	}
	runs := procsTaskRuns(down)
	var task client.Task
	e.Eventually("a task run while the probe is down", func() bool {
		for _, tk := range e.Extension(probe.Name).Tasks {
			if tk.Runs > runs {
				task = tk
			}
		}
		return task.Runs > runs
	})
	if left := down.NextRestart.Sub(task.LastRun); left < 2*time.Second {
		t.Fatalf("the task ran %s before the restart; the machine stalled for longer than the drill allows", left)
	}
	if !strings.Contains(task.LastErr, "is not running") || strings.Contains(task.LastErr, "deadline exceeded") {
		t.Fatalf("the task's run while the probe is down: %q; want unavailable at once, without waiting for the restart", task.LastErr)
	}
	// Negative control: once the package can start, the operator's
	// restart brings it back and the same call is answered.
	if err := os.Remove(loop); err != nil {
		t.Fatal(err)
	}
	if _, err := e.C.Restart(context.Background(), probe.Name, client.MaxWait); err != nil {
		t.Fatal(err)
	}
	e.Eventually("the probe running again", func() bool { return e.Extension(probe.Name).State == "running" })
	if res, err := e.C.Call(context.Background(), probe.Name, call); err != nil || res.Code != "" || len(res.Output.Data) == 0 {
		t.Fatalf("the call once the probe runs again: %+v %v", res, err)
	}
	report(t, "calls to a package in a loop of failed starts (next start %s away): the operator's call and the task answered unavailable at once; task: %.80q",
		time.Until(down.NextRestart).Round(time.Second), task.LastErr)
}

// procsCode is the code of an operator call's failure.
func procsCode(res client.CallResult, err error) string {
	var ce *client.Error
	if errors.As(err, &ce) {
		return ce.Code
	}
	return res.Code
}

// procsTaskRuns is how many times the package's tasks ran.
func procsTaskRuns(x client.Extension) int {
	n := 0
	for _, tk := range x.Tasks {
		n = max(n, tk.Runs)
	}
	return n
}

// TestDrillDaemonLogCountsRepeatedLines has the daemon log the same error
// again and again (an operator restarting a package whose files are gone)
// and checks, in either log format, that the line is written once and its
// repeats are counted.
func TestDrillDaemonLogCountsRepeatedLines(t *testing.T) {
	repeats := scale(200, 5000)
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			e := daemontest.New(t, bins)
			e.Launch("", nil, "--config", e.Config, "--log-format", format)
			e.Eventually("the daemon running its configuration", func() bool {
				st, err := e.C.Status(context.Background())
				return err == nil && st.PID == e.Cmd.Process.Pid && st.Phase == client.PhaseRunning
			})
			if err := os.Rename(e.ProbeDir(), e.ProbeDir()+".gone"); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < repeats; i++ {
				if res, err := e.C.Restart(context.Background(), probe.Name, client.MaxWait); err != nil || !res.Done {
					t.Fatalf("restart %d: %+v %v", i, res, err)
				}
			}
			e.Stop()
			full, counted := 0, 0
			for _, line := range strings.Split(e.Log.String(), "\n") {
				if !strings.Contains(line, "is no longer in") {
					continue
				}
				if m := procsRepeated.FindStringSubmatch(line); m != nil {
					n, _ := strconv.Atoi(m[1])
					counted += n
				} else {
					full++
				}
			}
			if full+counted != repeats || full*10 > repeats {
				t.Fatalf("%d restarts logged %d full lines and counted %d repeats; want each repeat counted, not written:\n%.3000s", repeats, full, counted, e.Log)
			}
			report(t, "the daemon's %s log: the same error %d times became %d full line(s) and a count of %d repeats", format, repeats, full, counted)
		})
	}
}

var procsRepeated = regexp.MustCompile(`last message repeated (\d+) times`)
