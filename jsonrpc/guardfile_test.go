//go:build unix

package jsonrpc

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestGuardTakesFilesAsTheirInterfacesWould builds a guard over two files,
// which takes them as files, and over the same files behind a wrapper that
// forwards every method, which asks each interface: both must find the same
// abilities. A pipe is polled (read and written directly, with deadlines);
// a regular file is not (no deadlines, so no direct reads or writes), the
// negative control that the file path does not just assume them.
func TestGuardTakesFilesAsTheirInterfacesWould(t *testing.T) {
	type wrapped struct{ *os.File }
	abilities := func(g *guard) [6]bool {
		return [6]bool{g.closeR != nil, g.closeW != nil, g.wdl != nil, g.raw != nil, g.rawR != nil, g.rdl != nil}
	}
	pipe := func(t *testing.T) (*os.File, *os.File) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(); w.Close() })
		return r, w
	}
	regular := func(t *testing.T) (*os.File, *os.File) {
		f, err := os.Create(filepath.Join(t.TempDir(), "f"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f, f
	}
	for _, tc := range []struct {
		name  string
		files func(*testing.T) (*os.File, *os.File)
		want  [6]bool
	}{
		{"a pipe is polled", pipe, [6]bool{true, true, true, true, true, true}},
		{"negative control: a regular file is not", regular, [6]bool{true, true, true, false, false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, w := tc.files(t)
			asFiles := abilities(newGuard(r, w, 1<<20, time.Second))
			asInterfaces := abilities(newGuard(wrapped{r}, wrapped{w}, 1<<20, time.Second))
			if asFiles != tc.want || asInterfaces != tc.want {
				t.Fatalf("abilities (close r, close w, write deadline, raw write, raw read, read deadline): as files %v, through the wrapper %v, want %v", asFiles, asInterfaces, tc.want)
			}
		})
	}
}
