package session

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// pipeSize is the capacity of the pipe f is an end of (F_GETPIPE_SZ).
func pipeSize(t *testing.T, f *os.File) int {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var size uintptr
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		size, _, errno = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETPIPE_SZ, 0)
	}); err != nil {
		t.Fatal(err)
	}
	if errno != 0 {
		t.Fatalf("F_GETPIPE_SZ: %v", errno)
	}
	return int(size)
}

// TestSpawnedProtocolPipesHoldAChunkLine holds the protocol pipes to the
// capacity an artifact chunk's line needs, now that they are sized after
// the process starts, and checks that the size is not simply the system's
// default (a fresh pipe's, the negative control).
func TestSpawnedProtocolPipesHoldAChunkLine(t *testing.T) {
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skipf("cat, which this test spawns, is not on PATH: %v", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fresh := pipeSize(t, r)
	r.Close()
	w.Close()
	if fresh >= protocolPipeBytes {
		t.Skipf("a fresh pipe already holds %d bytes here; the test could not tell a sized pipe from one left alone", fresh)
	}
	log, err := openStderrLog("", 0, LogRate{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := spawn([]string{cat}, t.TempDir(), nil, "pipesize-test", log)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		p.in.Close()
		if !p.waitExit(30 * time.Second) {
			p.signalGroup(syscall.SIGKILL)
			p.waitExit(30 * time.Second)
		}
		p.out.Close()
	}()
	for name, f := range map[string]*os.File{"stdin": p.in.f, "stdout": p.out.f} {
		if got := pipeSize(t, f); got != protocolPipeBytes {
			t.Errorf("the extension's %s pipe holds %d bytes, want %d (a fresh pipe holds %d)", name, got, protocolPipeBytes, fresh)
		}
	}
	// The pipes still carry bytes both ways.
	if _, err := p.in.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if err := p.out.f.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for n < len(buf) {
		k, err := p.out.Read(buf[n:])
		if err != nil {
			t.Fatalf("reading cat's echo: %v (got %q)", err, buf[:n])
		}
		n += k
	}
	if string(buf) != "ping\n" {
		t.Fatalf("cat echoed %q", buf)
	}
}
