package cli

import (
	"os"
	"testing"
)

// TestMain lets the test binary stand in for open-conduit when a command
// under test runs "this executable" again (config check starts the bundled
// packages as 'open-conduit extension-run NAME'), and when a test runs
// 'open-conduit call' as a process of its own, with its own environment
// and stdin.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && (os.Args[1] == "extension-run" || os.Args[1] == "call") {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
