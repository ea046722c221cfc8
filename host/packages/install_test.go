package packages_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/open-conduit/open-conduit/host/packages"
	"github.com/open-conduit/open-conduit/protocol"
)

// scriptPackage writes a package directory named name whose command is a
// shell script, with the manifest's provides as given.
func scriptPackage(t *testing.T, root, name, provides string) string {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := `{"name": "` + name + `", "version": "1.0.0", "protocol": [1], "command": ["run.sh"]` + provides + `}`
	write(t, filepath.Join(dir, protocol.ManifestFile), manifest, 0o644)
	write(t, filepath.Join(dir, "run.sh"), "#!/bin/sh\nexit 0\n", 0o777)
	return dir
}

func write(t *testing.T, path, text string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func newInstaller(t *testing.T) *packages.Installer {
	return &packages.Installer{Dir: filepath.Join(t.TempDir(), "config", "extensions")}
}

// installedNothing fails unless the installer left no package and an
// empty staging directory.
func installedNothing(t *testing.T, in *packages.Installer) {
	t.Helper()
	entries, _ := os.ReadDir(in.Dir)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			t.Errorf("a refused install left %s in %s", e.Name(), in.Dir)
		}
	}
	staged, _ := os.ReadDir(filepath.Join(in.Dir, packages.StagingDir))
	if len(staged) != 0 {
		t.Errorf("a refused install left %d entries in .staging", len(staged))
	}
}

// TestInstallFailingMidwayChangesNothing: a copy that fails after some
// files were written (a fifo, a broken link, an over-limit tree) leaves no
// package and nothing staged.
func TestInstallFailingMidwayChangesNothing(t *testing.T) {
	cases := []struct {
		name    string
		breakIt func(t *testing.T, dir string)
		want    string
	}{
		{"a fifo after regular files", func(t *testing.T, dir string) {
			if err := syscall.Mkfifo(filepath.Join(dir, "zz-fifo"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "special file"},
		{"a broken symbolic link", func(t *testing.T, dir string) {
			if err := os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "zz-link")); err != nil {
				t.Fatal(err)
			}
		}, "zz-link"},
		{"a symbolic link loop", func(t *testing.T, dir string) {
			if err := os.Symlink(".", filepath.Join(dir, "zz-loop")); err != nil {
				t.Fatal(err)
			}
		}, "more than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := newInstaller(t)
			in.Limits = packages.Limits{Entries: 50}
			dir := scriptPackage(t, t.TempDir(), "acme", "")
			c.breakIt(t, dir)
			_, err := in.Install(context.Background(), packages.Source{Path: dir})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("install: %v, want an error naming %q", err, c.want)
			}
			installedNothing(t, in)
		})
	}
	// Negative control: the same package, unbroken, installs.
	in := newInstaller(t)
	if _, err := in.Install(context.Background(), packages.Source{Path: scriptPackage(t, t.TempDir(), "acme", "")}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(in.Dir, "acme", "run.sh")); err != nil {
		t.Fatal(err)
	}
}

// TestInstalledPackageIsOwnerOnlyAndSelfContained: directories 0700,
// files keep exec bits without group or other write, links resolved.
func TestInstalledPackageIsOwnerOnlyAndSelfContained(t *testing.T) {
	in := newInstaller(t)
	src := t.TempDir()
	dir := scriptPackage(t, src, "acme", "")
	outside := filepath.Join(src, "shared.txt")
	write(t, outside, "shared", 0o666)
	if err := os.Symlink(outside, filepath.Join(dir, "data.txt")); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Install(context.Background(), packages.Source{Path: dir}); err != nil {
		t.Fatal(err)
	}
	modes := map[string]os.FileMode{"": 0o700 | os.ModeDir, "run.sh": 0o755, "data.txt": 0o644, protocol.ManifestFile: 0o644}
	for name, want := range modes {
		st, err := os.Lstat(filepath.Join(in.Dir, "acme", name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode() != want {
			t.Errorf("%q: mode %v, want %v", name, st.Mode(), want)
		}
	}
	for _, d := range []string{in.Dir, filepath.Dir(in.Dir)} {
		if st, _ := os.Stat(d); st.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, want 0700", d, st.Mode().Perm())
		}
	}
}

// TestInstallRefusesAConfigDirectoryAnotherUserOwns: the daemon would run
// what another user could change.
func TestInstallRefusesAConfigDirectoryAnotherUserOwns(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root (chown) to give the directory to another user")
	}
	in := newInstaller(t)
	config := filepath.Dir(in.Dir)
	if err := os.MkdirAll(config, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(config, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	src := scriptPackage(t, t.TempDir(), "acme", "")
	_, err := in.Install(context.Background(), packages.Source{Path: src})
	if err == nil || !strings.Contains(err.Error(), "owned by user 4242") {
		t.Fatalf("install into another user's config directory: %v", err)
	}
	if _, err := os.Stat(in.Dir); err == nil {
		t.Error("the refused install created extensions/ in another user's directory")
	}
	// Negative control: given back, the install goes through.
	if err := os.Chown(config, 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Install(context.Background(), packages.Source{Path: src}); err != nil {
		t.Fatal(err)
	}
}

// TestArchiveOverTheByteLimitIsRefused: a zip bomb stops at the bound.
func TestArchiveOverTheByteLimitIsRefused(t *testing.T) {
	in := newInstaller(t)
	in.Limits = packages.Limits{Bytes: 1 << 20}
	big := bytes.Repeat([]byte{0}, 2<<20)
	file := filepath.Join(t.TempDir(), "acme.tar.gz")
	writeArchive(t, file, map[string][]byte{
		"acme/" + protocol.ManifestFile: []byte(`{"name": "acme", "protocol": [1], "command": ["run.sh"]}`),
		"acme/run.sh":                   []byte("#!/bin/sh\n"),
		"acme/zeros":                    big,
	})
	_, err := in.Install(context.Background(), packages.Source{Path: file})
	if !errors.Is(err, packages.ErrInvalidArchive) || !strings.Contains(err.Error(), "more than 1048576 bytes") {
		t.Fatalf("a 2 MiB archive under a 1 MiB bound: %v", err)
	}
	installedNothing(t, in)
	// Negative control: under a bound it fits, it installs.
	in.Limits.Bytes = 4 << 20
	if _, err := in.Install(context.Background(), packages.Source{Path: file}); err != nil {
		t.Fatal(err)
	}
}

func writeArchive(t *testing.T, file string, files map[string][]byte) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, name := range []string{"acme/" + protocol.ManifestFile, "acme/run.sh", "acme/zeros"} {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(files[name])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(files[name]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestUsesNamesEachPlaceTheConfigUsesThePackage: what removal would
// break, and nothing a config that does not use the package has.
func TestUsesNamesEachPlaceTheConfigUsesThePackage(t *testing.T) {
	acme := &protocol.Manifest{Name: "acme", Protocol: []int{1}, Command: []string{"run.sh"},
		Provides: protocol.Provides{Extensions: []protocol.ExtensionType{{Type: "acme"}}, Connections: []protocol.ConnectionType{{Type: "acme-api"}}}}
	other := &protocol.Manifest{Name: "other", Protocol: []int{1}, Command: []string{"run.sh"},
		Provides: protocol.Provides{Extensions: []protocol.ExtensionType{{Type: "other"}}}}
	ms := []*protocol.Manifest{acme, other}
	uses := `{"scopes": [{"id": "a", "entries": [{"name": "o1", "type": "other"}, {"name": "a1", "type": "acme"}]}],
  "connections": [{"name": "c1", "type": "acme-api"}]}`
	got := packages.Uses(context.Background(), []byte(uses), "", ms, "acme")
	paths := map[string]bool{}
	for _, u := range got {
		paths[u.Path] = true
	}
	for _, want := range []string{"/scopes/0/entries/1/type", "/connections/0/type"} {
		if !paths[want] {
			t.Errorf("uses lack %s: %+v", want, got)
		}
	}
	if paths["/scopes/0/entries/0/type"] {
		t.Errorf("another package's entry counted as a use: %+v", got)
	}
	// Negative control: removing the package the config does not use.
	clean := `{"scopes": [{"id": "a", "entries": [{"name": "a1", "type": "acme"}]}]}`
	if got := packages.Uses(context.Background(), []byte(clean), "", ms, "other"); len(got) != 0 {
		t.Errorf("uses of a package the config does not use: %+v", got)
	}
}
