package scaffold

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	json "github.com/go-json-experiment/json"
)

// requirement is one require line of a go.mod.
type requirement struct {
	Path    string
	Version string
}

// goMod is a new package's go.mod: Open Conduit required at version, the
// tool directive that makes `go tool open-conduit` build it from there, the
// checkout's requirements (indirect) when replace names one, and the
// replace directive.
func goMod(module, goVersion, version string, indirect []requirement, replace string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "module %s\n\ngo %s\n\nrequire %s %s\n", module, goVersion, ModulePath, version)
	if len(indirect) > 0 {
		b.WriteString("\nrequire (\n")
		for _, r := range indirect {
			fmt.Fprintf(&b, "\t%s %s // indirect\n", r.Path, r.Version)
		}
		b.WriteString(")\n")
	}
	fmt.Fprintf(&b, "\ntool %s\n", ModulePath)
	if replace != "" {
		fmt.Fprintf(&b, "\nreplace %s => %s\n", ModulePath, quoteModPath(replace))
	}
	return b.Bytes()
}

// quoteModPath quotes a directory for go.mod when it holds a space or a
// quote.
func quoteModPath(p string) string {
	if strings.ContainsAny(p, " \t\"'`") {
		return fmt.Sprintf("%q", p)
	}
	return p
}

// fromCheckout starts go.mod and go.sum from the checkout's: its go
// directive and requirements, and its go.sum, so the package builds from
// the module cache the checkout builds from.
func fromCheckout(ctx context.Context, o Options, version string, files map[string][]byte) error {
	cmd := exec.CommandContext(ctx, "go", "mod", "edit", "-json", filepath.Join(o.Replace, "go.mod"))
	cmd.Env = goEnv()
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("reading %s: %w%s", filepath.Join(o.Replace, "go.mod"), goProblem(err), stderrOf(err))
	}
	var mod struct {
		Module  struct{ Path string }
		Go      string
		Require []requirement
	}
	if err := json.Unmarshal(out, &mod); err != nil {
		return fmt.Errorf("reading %s: %w", filepath.Join(o.Replace, "go.mod"), err)
	}
	if mod.Module.Path != ModulePath {
		return fmt.Errorf("--replace %s is the module %s, not %s: name an Open Conduit checkout", o.Replace, mod.Module.Path, ModulePath)
	}
	if mod.Go == "" {
		mod.Go = GoVersion
	}
	files["go.mod"] = goMod(o.Module, mod.Go, version, mod.Require, o.Replace)
	sum, err := os.ReadFile(filepath.Join(o.Replace, "go.sum"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	files["go.sum"] = sum
	return nil
}

// tidy runs go mod tidy in dir, so go.sum holds everything the package and
// its tool need.
func tidy(ctx context.Context, dir string) error {
	cmd := exec.CommandContext(ctx, "go", "mod", "tidy")
	cmd.Dir = dir
	cmd.Env = goEnv()
	if _, err := cmd.Output(); err != nil {
		return fmt.Errorf("go mod tidy failed: %w%s", goProblem(err), stderrOf(err))
	}
	return nil
}

// goEnv is the environment the go command runs in: this one, outside any
// workspace, so a go.work above the directory cannot change what the new
// module resolves.
func goEnv() []string { return append(os.Environ(), "GOWORK=off") }

// goProblem says to install Go when the go command is missing.
func goProblem(err error) error {
	if errors.Is(err, exec.ErrNotFound) {
		return errors.New("the go command is not on PATH: install Go " + GoVersion + " or later")
	}
	return err
}

// stderrOf is the last lines the go command printed on stderr, after ": ".
func stderrOf(err error) string {
	var ee *exec.ExitError
	if !errors.As(err, &ee) || len(ee.Stderr) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(ee.Stderr)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return ": " + strings.Join(lines, "; ")
}
