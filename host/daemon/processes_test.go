package daemon

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/session"
)

// recordDaemon is a daemon on state with only what the process record
// needs, and its log.
func recordDaemon(state string) (*Daemon, *bytes.Buffer) {
	var log bytes.Buffer
	return &Daemon{opts: Options{StateDir: state}, logger: slog.New(slog.NewTextHandler(&log, nil)), started: time.Now()}, &log
}

// markedSleep starts sleep carrying run's marker, in a session of its own
// when setsid, and kills it at cleanup.
func markedSleep(t *testing.T, run string, setsid bool) int {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	cmd.Env = []string{session.MarkerEnv + "=" + run + ":probe:1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: setsid}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd.Process.Pid
}

func gone(pid int) bool {
	_, ok := startTicks(pid)
	return !ok
}

func waitGone(t *testing.T, what string, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) is still running", what, pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestNextStartReapsWhatACrashedRunLeftButNotDetachedWork(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the reaper reads Linux's /proc")
	}
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("the test's processes run sleep, which is not on PATH")
	}
	state := t.TempDir()
	first, _ := recordDaemon(state)
	if err := first.reapOrphans(); err != nil {
		t.Fatal(err)
	}
	run := first.procs.token()
	left := markedSleep(t, run, false)
	escaped := markedSleep(t, run, true)
	work := markedSleep(t, run, true)
	other := markedSleep(t, session.NewRun(), false)
	if err := first.procs.detach("probe", work); err != nil {
		t.Fatal(err)
	}
	// The first daemon is gone without a stop (kill -9): the next start on
	// the state directory reaps its run.
	second, log := recordDaemon(state)
	if err := second.reapOrphans(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "a process the crashed run left", left)
	waitGone(t, "a process the crashed run left in a session of its own", escaped)
	if gone(work) || gone(other) {
		t.Fatalf("reaped what it must spare: detached work gone %v, another run's process gone %v", gone(work), gone(other))
	}
	if !strings.Contains(log.String(), "killed processes an earlier daemon's packages left running") {
		t.Fatalf("the reap is not logged:\n%s", log)
	}
	rec, err := readProcessRecord(filepath.Join(state, processRecordFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Runs) != 1 || rec.Runs[0].Token != second.procs.token() || len(rec.Detached) != 1 || rec.Detached[0].PID != work {
		t.Fatalf("record after the second start: %+v", rec)
	}
	// A clean stop forgets the run; detached work stays recorded while it
	// runs, and is forgotten once it ended.
	second.procs.release(second.logger)
	if err := syscall.Kill(work, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "the detached work", work)
	third, _ := recordDaemon(state)
	if err := third.reapOrphans(); err != nil {
		t.Fatal(err)
	}
	rec, err = readProcessRecord(filepath.Join(state, processRecordFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Runs) != 1 || rec.Runs[0].Token != third.procs.token() || len(rec.Detached) != 0 {
		t.Fatalf("record after a clean stop and the work's end: %+v", rec)
	}
	if st, err := os.Stat(filepath.Join(state, processRecordFile)); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the record is not owner-only: %v %v", st.Mode(), err)
	}
}

func TestDamagedProcessRecordRefusesTheStartWithTheRemedy(t *testing.T) {
	state := t.TempDir()
	path := filepath.Join(state, processRecordFile)
	if err := os.WriteFile(path, []byte(`{"runs": [`), 0o600); err != nil {
		t.Fatal(err)
	}
	d, _ := recordDaemon(state)
	err := d.reapOrphans()
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "remove it") {
		t.Fatalf("got %v", err)
	}
	// Negative control: without the damaged file the start goes on.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := d.reapOrphans(); err != nil {
		t.Fatal(fmt.Errorf("a missing record: %w", err))
	}
}

// TestSpareRecordsOnlyTheNamedLiveProcessOnce: a process named by its pid
// and start time is recorded once however often it is named; one named
// with another start time, or one that ended, is not recorded; and a
// spared process outlives the reap of its run while an unspared one of the
// same run dies (the negative control).
func TestSpareRecordsOnlyTheNamedLiveProcessOnce(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("detached work is found through /proc, which only linux has")
	}
	d, _ := recordDaemon(t.TempDir())
	if err := d.reapOrphans(); err != nil {
		t.Fatal(err)
	}
	run := d.procs.token()
	kept := markedSleep(t, run, true)
	other := markedSleep(t, run, true)
	ticks, ok := startTicks(kept)
	if !ok {
		t.Fatal("the sleep is not running")
	}
	for range 3 {
		if err := d.procs.spare("probe", protocol.ExecutionProcess{PID: kept, StartTicks: ticks}); err != nil {
			t.Fatal(err)
		}
	}
	otherTicks, _ := startTicks(other)
	if err := d.procs.spare("probe", protocol.ExecutionProcess{PID: other, StartTicks: otherTicks + 1000}); err != nil {
		t.Fatal(err)
	}
	if err := d.procs.spare("probe", protocol.ExecutionProcess{PID: 1 << 30, StartTicks: 1}); err != nil {
		t.Fatal(err)
	}
	rec, err := readProcessRecord(d.procs.path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Detached) != 1 || rec.Detached[0].PID != kept || rec.Detached[0].StartTicks != ticks {
		t.Fatalf("recorded detached work %+v, want only pid %d once", rec.Detached, kept)
	}
	d.procs.release(d.logger)
	waitGone(t, "the unspared process of the run", other)
	if gone(kept) {
		t.Fatal("the spared process died with its run")
	}
}

// TestPersistRecoveryRefusesAProcessItCannotName: a process named with a
// start time it does not have, or with no pid, is refused invalid, and
// another package's process unauthorized, before the engine is asked; and
// nothing is spared.
func TestPersistRecoveryRefusesAProcessItCannotName(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process start times are read from /proc, which only linux has")
	}
	d, _ := recordDaemon(t.TempDir())
	if err := d.reapOrphans(); err != nil {
		t.Fatal(err)
	}
	pid := markedSleep(t, d.procs.token(), true)
	ticks, _ := startTicks(pid)
	for _, proc := range []protocol.ExecutionProcess{{PID: pid, StartTicks: ticks + 7}, {PID: 0, StartTicks: ticks}, {PID: pid}} {
		err := d.persistRecovery(context.Background(), "probe", protocol.ExecutionPersistRecoveryParams{
			ExecutionRef: protocol.ExecutionRef{Execution: "x_1", Epoch: 1}, Recovery: []byte(`{}`), Process: &proc})
		if protocol.CodeOf(err) != protocol.CodeInvalid {
			t.Errorf("process %+v: %v, want invalid", proc, err)
		}
	}
	// The sleep carries probe's launch marker: another package may not
	// name it.
	err := d.persistRecovery(context.Background(), "shell", protocol.ExecutionPersistRecoveryParams{
		ExecutionRef: protocol.ExecutionRef{Execution: "x_1", Epoch: 1}, Recovery: []byte(`{}`),
		Process: &protocol.ExecutionProcess{PID: pid, StartTicks: ticks}})
	if protocol.CodeOf(err) != protocol.CodeUnauthorized {
		t.Errorf("another package's process: %v, want unauthorized", err)
	}
	if rec, _ := readProcessRecord(d.procs.path); len(rec.Detached) != 0 {
		t.Errorf("a refused call spared %+v", rec.Detached)
	}
}
