package scaffold_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	json "github.com/go-json-experiment/json"
)

// TestExtensionNewRefusesWhatItCannotWrite runs the real binary: a name
// the manifest rules or the host rule out, and a directory that is not
// empty, are refused as misuse (exit 2) with a message naming what to
// change, and nothing is written; the negative control writes the
// repository and says what it wrote with --json.
func TestExtensionNewRefusesWhatItCannotWrite(t *testing.T) {
	bin, root := openConduit(t), checkout(t)
	work := t.TempDir()
	full := filepath.Join(work, "full")
	if err := os.MkdirAll(full, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(full, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"a name that is not an identifier", []string{"Weather"}, "is not an identifier"},
		{"a reserved name", []string{"core"}, "registers itself"},
		{"a builtin operation's name", []string{"wait"}, "registers itself"},
		{"a package the binary serves", []string{"hello"}, "serves itself"},
		{"a directory that is not empty", []string{"weather", "--dir", full}, "is not empty"},
		{"a module path that is not one", []string{"weather", "--module", "example.com/a b"}, "is not a module path"},
		{"a replace that is no checkout", []string{"weather", "--replace", work}, "not an Open Conduit checkout"},
		{"no name", nil, "needs at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"extension", "new"}, tt.args...)
			if !strings.Contains(strings.Join(tt.args, " "), "--replace") {
				args = append(args, "--replace", root)
			}
			cmd := exec.Command(bin, args...)
			cmd.Dir = work
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), tt.want) {
				t.Fatalf("%v: %v\n%s\nwant exit 2 saying %q", args, err, out, tt.want)
			}
			if entries, _ := os.ReadDir(work); len(entries) != 1 {
				t.Fatalf("a refused new wrote into %s: %v", work, entries)
			}
			if data, _ := os.ReadFile(filepath.Join(full, "notes.txt")); string(data) != "mine" {
				t.Fatal("a refused new changed the directory's file")
			}
		})
	}
	t.Run("negative control", func(t *testing.T) {
		cmd := exec.Command(bin, "extension", "new", "weather", "--module", "example.com/me/weather", "--replace", root, "--json")
		cmd.Dir = work
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var res struct {
			Dir, Module, Requires, Replace string
			Files                          []string
		}
		if err := json.Unmarshal(out, &res, json.MatchCaseInsensitiveNames(true)); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if res.Dir != filepath.Join(work, "weather") || res.Module != "example.com/me/weather" || res.Replace != root {
			t.Fatalf("answer: %+v", res)
		}
		for _, f := range []string{"go.mod", "go.sum", "main.go", "main_test.go", "Makefile", "README.md", "certification.json"} {
			if _, err := os.Stat(filepath.Join(res.Dir, f)); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
		}
	})
}

// TestExtensionNewWithoutAVersionNeedsReplace: a development build with
// no version control information cannot name a version to require, so
// without --replace it refuses, saying to pass it, and writes nothing.
func TestExtensionNewWithoutAVersionNeedsReplace(t *testing.T) {
	bin := openConduit(t)
	work := t.TempDir()
	cmd := exec.Command(bin, "extension", "new", "weather")
	cmd.Dir = work
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "--replace DIR") {
		t.Fatalf("%v\n%s", err, out)
	}
	if entries, _ := os.ReadDir(work); len(entries) != 0 {
		t.Fatalf("wrote %v", entries)
	}
}
