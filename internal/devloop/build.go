package devloop

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/open-conduit/open-conduit/host/packages"
	"github.com/open-conduit/open-conduit/protocol"
)

// certificationFile is the certification fixture a package may ship
// beside its manifest; a Go package's layout copies it from the source.
const certificationFile = "certification.json"

// BuildError is a build that failed: the compiler's (or the manifest
// check's) output, to print as it is.
type BuildError struct {
	// Output is what the build printed.
	Output string
	// Err is how it failed.
	Err error
}

func (e *BuildError) Error() string {
	return fmt.Sprintf("%v\n%s", e.Err, strings.TrimRight(e.Output, "\n"))
}

func (e *BuildError) Unwrap() error { return e.Err }

// Kind says how a package directory is built.
type Kind string

const (
	// Script is a directory holding its manifest: it is laid out by copying.
	Script Kind = "script"
	// GoModule is a directory with a go.mod: its main package is built and
	// the manifest read from the binary.
	GoModule Kind = "go"
)

// KindOf says how dir is built, or why it cannot be.
func KindOf(dir string) (Kind, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("the package directory %s: %w", dir, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%s is not a directory: name the package's directory", dir)
	}
	if isFile(filepath.Join(dir, protocol.ManifestFile)) {
		return Script, nil
	}
	if isFile(filepath.Join(dir, "go.mod")) {
		return GoModule, nil
	}
	return "", fmt.Errorf("%s holds neither %s nor go.mod: name a package directory (a Go module whose main package uses the SDK, or a package with its manifest)",
		dir, protocol.ManifestFile)
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// Layout is a package built and laid out in a staging directory, ready to
// be installed.
type Layout struct {
	// Dir is the staged package directory.
	Dir string
	// Manifest is its manifest.
	Manifest *protocol.Manifest
}

// build builds the package in src and lays it out in a new directory
// under work: a script package is copied, a Go module is built with go
// build and laid out with the manifest its binary prints.
func build(ctx context.Context, src, work string) (Layout, error) {
	kind, err := KindOf(src)
	if err != nil {
		return Layout{}, err
	}
	if err := os.MkdirAll(work, 0o700); err != nil {
		return Layout{}, err
	}
	stage, err := os.MkdirTemp(work, "stage-")
	if err != nil {
		return Layout{}, err
	}
	if err := os.Chmod(stage, 0o755); err != nil {
		return Layout{}, err
	}
	var m *protocol.Manifest
	if kind == Script {
		m, err = layoutScript(src, stage)
	} else {
		m, err = layoutGo(ctx, src, work, stage)
	}
	if err != nil {
		_ = os.RemoveAll(stage)
		return Layout{}, err
	}
	return Layout{Dir: stage, Manifest: m}, nil
}

// layoutScript copies a package that holds its manifest, leaving out
// hidden files and directories (version control, editors' files).
func layoutScript(src, stage string) (*protocol.Manifest, error) {
	data, err := os.ReadFile(filepath.Join(src, protocol.ManifestFile))
	if err != nil {
		return nil, err
	}
	m, err := parseManifest(data, protocol.ManifestFile)
	if err != nil {
		return nil, err
	}
	return m, copyTree(src, stage)
}

// layoutGo builds src's main package, asks the binary for its manifest,
// and lays the package out: the manifest, the binary under the manifest's
// command, and the certification fixture when src has one.
func layoutGo(ctx context.Context, src, work, stage string) (*protocol.Manifest, error) {
	bin := filepath.Join(work, "build", "package")
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	cmd.Dir = src
	env, noCgo := goBuildEnv(os.Environ())
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		err := fmt.Errorf("go build in %s failed", src)
		if noCgo {
			err = fmt.Errorf("%w (it ran with CGO_ENABLED=0, as the environment does not set CGO_ENABLED; a package that needs cgo builds with CGO_ENABLED=1 set)", err)
		}
		return nil, &BuildError{Output: out.String(), Err: err}
	}
	var manifest, errOut bytes.Buffer
	cmd = exec.CommandContext(ctx, bin, "package-manifest")
	cmd.Stdout, cmd.Stderr = &manifest, &errOut
	if err := cmd.Run(); err != nil {
		return nil, &BuildError{Output: errOut.String(),
			Err: fmt.Errorf("the built binary did not print its manifest (%v): its main must answer package-manifest, as the SDK's main does", err)}
	}
	m, err := parseManifest(manifest.Bytes(), "the binary's package-manifest")
	if err != nil {
		return nil, err
	}
	if len(m.Command) == 0 || filepath.IsAbs(m.Command[0]) || protocol.IsHostRun(m.Command, m.Name) {
		return nil, &BuildError{Err: fmt.Errorf("the manifest's command %q must name the package's own binary, relative to its directory", m.Command)}
	}
	target := filepath.Join(stage, filepath.FromSlash(m.Command[0]))
	if !strings.HasPrefix(target, stage+string(filepath.Separator)) {
		return nil, &BuildError{Err: fmt.Errorf("the manifest's command %q leaves the package directory", m.Command[0])}
	}
	if err := copyFile(bin, target, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(stage, protocol.ManifestFile), manifest.Bytes(), 0o644); err != nil {
		return nil, err
	}
	if cert := filepath.Join(src, certificationFile); isFile(cert) {
		if err := copyFile(cert, filepath.Join(stage, certificationFile), 0o644); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// goBuildEnv is env with cgo turned off (noCgo), unless env chooses (sets
// CGO_ENABLED). Every SDK extension imports net (through the JSON-RPC
// library), and with cgo on, net links the C library dynamically: the
// binary then runs the dynamic loader at every start (about a millisecond
// on a small machine, a third of an SDK extension's start) and needs a C
// library like the build machine's wherever it is installed. The
// scaffold's Makefile builds the same way.
func goBuildEnv(env []string) (_ []string, noCgo bool) {
	for _, kv := range env {
		if strings.HasPrefix(kv, "CGO_ENABLED=") {
			return env, false
		}
	}
	return append(env[:len(env):len(env)], "CGO_ENABLED=0"), true
}

// parseManifest parses and validates a manifest, as discovery will.
func parseManifest(data []byte, from string) (*protocol.Manifest, error) {
	m, err := protocol.ParseManifest(data)
	if err == nil {
		err = m.Validate()
	}
	if err != nil {
		return nil, &BuildError{Err: fmt.Errorf("%s is not a valid manifest: %w", from, err)}
	}
	return m, nil
}

// copyTree copies src's regular files, directories and symbolic links
// into dst, leaving out hidden names.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil || rel == "." {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(target, 0o755)
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case info.Mode().IsRegular():
			return copyFile(path, target, info.Mode().Perm()&0o755)
		}
		return nil
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// install swaps a staged layout in as extensions/<name> under dir: the
// layout is renamed into place and what was there before is removed, so
// install installs the build laid out in l through the installer, as
// extension install (the first build) or extension update (every rebuild)
// would, and drops the layout: the installer keeps its own copy.
func install(ctx context.Context, in *packages.Installer, l Layout, update bool) error {
	defer os.RemoveAll(l.Dir)
	// The installer reads a directory named after the manifest, as
	// discovery does.
	parent, err := os.MkdirTemp(filepath.Dir(l.Dir), "install-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(parent)
	named := filepath.Join(parent, l.Manifest.Name)
	if err := os.Rename(l.Dir, named); err != nil {
		return err
	}
	src := packages.Source{Path: named}
	if update {
		_, err = in.Update(ctx, src)
		return err
	}
	_, err = in.Install(ctx, src)
	return err
}
