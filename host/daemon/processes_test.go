package daemon

import (
	"bytes"
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
