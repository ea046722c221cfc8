package scaffold_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The open-conduit binary the end-to-end tests run, built once on first
// use so the unit tests beside them need no build.
var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// openConduit is the path of the open-conduit binary built from this
// checkout, without version control information, so it cannot name a
// published version and every test passes --replace; a test without the
// go command is skipped.
func openConduit(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command on PATH to build open-conduit")
	}
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "oc-scaffold-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "open-conduit")
		cmd := exec.Command("go", "build", "-buildvcs=false", "-o", binPath, "github.com/open-conduit/open-conduit")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// checkout is this repository's root, what --replace names.
func checkout(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}
