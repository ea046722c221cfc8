package session

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// TestParkUntilReadableSeesWhatCameBeforeTheWait holds the poller waits of
// the exit watcher and the stderr drain to a readiness that came before
// they were armed: a pipe with a byte already in it, and the pidfd of a
// process that has already exited. The poller is edge-triggered and the
// runtime forgets an edge it saw before the wait is armed, so without
// asking the descriptor first some of these waits never ended (seen under
// load, as a crash report without the exit status).
func TestParkUntilReadableSeesWhatCameBeforeTheWait(t *testing.T) {
	for range 50 {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		returns(t, "a pipe with a byte in it", func() { parkUntilReadable(r) })
		r.Close()
		w.Close()
	}
	for range 10 {
		cmd := exec.Command("true")
		if err := cmd.Start(); err != nil {
			t.Skipf("true, which this test starts, is not on PATH: %v", err)
		}
		// Wait for the exit without reaping (waitid, WNOWAIT): the pidfd is
		// readable before awaitExit opens it.
		var info [128]byte
		const pPID, wExited, wNoWait = 1, 4, 0x1000000
		if _, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(cmd.Process.Pid),
			uintptr(unsafe.Pointer(&info[0])), wExited|wNoWait, 0, 0); errno != 0 {
			t.Fatalf("waitid: %v", errno)
		}
		returns(t, "the pidfd of an exited process", func() { awaitExit(cmd.Process.Pid) })
		_ = cmd.Wait()
	}
}

// returns fails the test when f has not returned within a minute.
func returns(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("the wait on %s did not return", what)
	}
}
