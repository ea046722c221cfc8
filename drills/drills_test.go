// Package drills holds the fault and bad-input drills: each one breaks the
// daemon the way an attacker or a bad day would (a kill -9 after an
// acknowledged write, a planted symlink, a flood, a torn frame, a full
// disk) against the real binary, and checks what the daemon promises then.
// `go test ./drills/` (and so `make test`) runs each drill briefly;
// `make drills` runs them at full length (-drills.full), with the figures
// each prints.
package drills

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/open-conduit/open-conduit/internal/daemontest"
)

var full = flag.Bool("drills.full", false, "run every drill at full length (make drills)")

// bins are built once per test binary.
var bins daemontest.Bins

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(daemontest.Main(m, &bins))
}

// scale is a drill's count: brief in make test, full in make drills.
func scale(brief, fullLength int) int {
	if *full {
		return fullLength
	}
	return brief
}

// report prints a drill's figures, so make drills' output is its record.
func report(t *testing.T, format string, args ...any) {
	t.Helper()
	line := fmt.Sprintf(format, args...)
	t.Log(line)
	fmt.Fprintf(os.Stderr, "drill %s: %s\n", t.Name(), line)
}
