//go:build unix && !linux

package session

import (
	"os"
	"syscall"
)

// procAttr starts the extension in a session of its own (so its process
// group too). Without a parent-death signal here, the SDK's exit on stdin
// EOF is what keeps a crashed daemon from orphaning it.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}

// stderrPipe is the pipe an extension's stderr is drained from.
func stderrPipe() (r, w *os.File, err error) { return os.Pipe() }

// protocolPipes are the extension's stdin (inR its end, inW ours) and
// stdout (outW its end, outR ours).
func protocolPipes() (inR, inW, outR, outW *os.File, err error) {
	inR, inW, err = os.Pipe()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	outR, outW, err = os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, nil, nil, nil, err
	}
	return inR, inW, outR, outW, nil
}

// growPipe leaves the pipe at the system's default size.
func growPipe(*os.File) {}

// awaitExit returns at once: Wait blocks for the exit here.
func awaitExit(int) {}

// awaitStderr returns at once: the drain's read waits here.
func awaitStderr(*os.File) {}
