//go:build !linux

package sdk

import "os"

// stdinIsTerminal reports whether stdin is a character device other than
// the null device: a terminal, where the daemon would give a pipe.
func stdinIsTerminal() bool {
	fi, err := os.Stdin.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}
