package sdk_test

import (
	"fmt"
	"os"
	"testing"
)

// exampleTB lets an example run an extension on sdktest, which reports to a
// testing.TB: it implements what sdktest calls, and panics on a failure.
type exampleTB struct {
	testing.TB
	cleanups []func()
	dirs     []string
}

func (t *exampleTB) Helper()                        {}
func (t *exampleTB) Fatal(args ...any)              { panic(fmt.Sprint(args...)) }
func (t *exampleTB) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }
func (t *exampleTB) Errorf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }
func (t *exampleTB) Cleanup(f func())               { t.cleanups = append(t.cleanups, f) }
func (t *exampleTB) TempDir() string {
	dir, err := os.MkdirTemp("", "sdk-example-")
	if err != nil {
		panic(err)
	}
	t.dirs = append(t.dirs, dir)
	return dir
}

// done runs the cleanups, last first, as a test's end would.
func (t *exampleTB) done() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
	for _, d := range t.dirs {
		_ = os.RemoveAll(d)
	}
}
