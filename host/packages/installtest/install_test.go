package installtest_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/internal/daemontest"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

var (
	bins daemontest.Bins
	// shelf are the shelf fixture's builds: v1 (kv_version 1), v2
	// (kv_version 2), and foreign, built for another architecture.
	shelf struct{ v1, v2, foreign string }
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "oc-installtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if bins, err = daemontest.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	for _, b := range []struct {
		out     *string
		name    string
		ldflags string
		goarch  string
	}{
		{&shelf.v1, "v1", "-X main.version=1.0.0 -X main.kvVersion=1", runtime.GOARCH},
		{&shelf.v2, "v2", "-X main.version=2.0.0 -X main.kvVersion=2", runtime.GOARCH},
		{&shelf.foreign, "foreign", "", other},
	} {
		*b.out = filepath.Join(dir, "shelf-"+b.name)
		cmd := exec.Command("go", "build", "-ldflags", b.ldflags, "-o", *b.out, "github.com/open-conduit/open-conduit/fixtures/shelf/cmd/shelf-extension")
		cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+b.goarch, "CGO_ENABLED=0")
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "building the shelf fixture (the tests need the go command): %v\n", err)
			return 1
		}
	}
	return m.Run()
}

// shelfManifest is the manifest the shelf fixture announces for a release.
func shelfManifest(version string, kv int) []byte {
	return fmt.Appendf(nil, `{"name": "shelf", "version": %q, "protocol": [1], "command": ["shelf-extension"], "kv_version": %d,
  "provides": {"extensions": [{"type": "shelf"}]}}`, version, kv)
}

// shelfDir lays a release of shelf out as a package directory.
func shelfDir(t *testing.T, exe, version string, kv int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "shelf")
	mustMkdir(t, dir)
	copyFile(t, exe, filepath.Join(dir, "shelf-extension"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, protocol.ManifestFile), shelfManifest(version, kv), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// entry is one tar entry of a test archive.
type entry struct {
	name string
	typ  byte
	body []byte
	link string
}

// shelfEntries are an archive's entries for a release of shelf.
func shelfEntries(t *testing.T, exe, version string, kv int) []entry {
	t.Helper()
	body, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	return []entry{
		{name: "shelf/", typ: tar.TypeDir},
		{name: "shelf/" + protocol.ManifestFile, typ: tar.TypeReg, body: shelfManifest(version, kv)},
		{name: "shelf/shelf-extension", typ: tar.TypeReg, body: body},
	}
}

// archive writes entries as a .tar.gz and returns its path and digest.
func archive(t *testing.T, entries []entry) (string, string) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o755, Size: int64(len(e.body)), Linkname: e.link}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.body[:h.Size]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "shelf.tar.gz")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	return file, hex.EncodeToString(sum[:])
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, mode); err != nil {
		t.Fatal(err)
	}
}

// cli runs open-conduit with the env's --config and --state, in a home of
// its own, and returns its stdout, stderr and exit code.
func cli(t *testing.T, e *daemontest.Env, args ...string) (string, string, int) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(bins.OpenConduit, append(args, "--config", e.Config, "--state", e.State)...)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, "config"), "XDG_STATE_HOME="+filepath.Join(home, "state"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// want runs the command and fails unless it exits with code.
func want(t *testing.T, e *daemontest.Env, code int, args ...string) (string, string) {
	t.Helper()
	out, errOut, got := cli(t, e, args...)
	if got != code {
		t.Fatalf("%v exited %d, want %d\nstdout:\n%s\nstderr:\n%s", args, got, code, out, errOut)
	}
	return out, errOut
}

func installedDir(e *daemontest.Env) string {
	return filepath.Join(filepath.Dir(e.Config), "extensions")
}

// noShelf fails unless nothing of shelf is installed and nothing staged.
func noShelf(t *testing.T, e *daemontest.Env) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(installedDir(e), "shelf")); err == nil {
		t.Error("a refused install left extensions/shelf")
	}
	staged, _ := os.ReadDir(filepath.Join(installedDir(e), ".staging"))
	if len(staged) != 0 {
		t.Errorf("a refused install left %d entries in .staging", len(staged))
	}
}

// shelfScope is a scope using the shelf package.
const shelfScope = `{"id": "shelves", "entries": [{"name": "s1", "type": "shelf"}]}`

func withShelf(config string) string {
	return strings.Replace(config, `"scopes": [`, `"scopes": [`+shelfScope+", ", 1)
}

// TestInstallUpdateRollbackRemoveRoundTrip: an archive install checked by
// its digest, an update a running daemon serves at once and that migrates
// the KV layout, a rollback the daemon then refuses (kv_downgrade) at once
// and at its next start, a roll forward, and a removal refused while the
// config uses the package that keeps its durable state once allowed.
func TestInstallUpdateRollbackRemoveRoundTrip(t *testing.T) {
	e := daemontest.New(t, bins)
	file, sum := archive(t, shelfEntries(t, shelf.v1, "1.0.0", 1))
	srv := httptest.NewServer(http.FileServer(http.Dir(filepath.Dir(file))))
	defer srv.Close()
	url := srv.URL + "/" + filepath.Base(file)

	out, _ := want(t, e, 0, "extension", "install", url, "--sha256", sum)
	for _, s := range []string{"installed shelf 1.0.0", "archive sha256 " + sum, `{"name": "shelf1", "type": "shelf"}`,
		"open-conduit config check", "no daemon answers", "next 'open-conduit serve'"} {
		if !strings.Contains(out, s) {
			t.Errorf("install says no %q:\n%s", s, out)
		}
	}
	_, errOut := want(t, e, 1, "extension", "install", shelfDir(t, shelf.v1, "1.0.0", 1))
	if !strings.Contains(errOut, protocol.CodeInstallState) || !strings.Contains(errOut, "extension update") {
		t.Errorf("installing over an installed package: %s", errOut)
	}

	e.WriteConfig(withShelf(daemontest.Config))
	e.Start()
	if x := e.Extension("shelf"); x.State != "running" || x.Version != "1.0.0" {
		t.Fatalf("shelf v1 in the daemon: %+v\n%s", x, e.Log)
	}

	// Update while serving: the daemon restarts shelf on v2, which
	// migrates the layout to 2 at configure.
	out, _ = want(t, e, 0, "extension", "update", shelfDir(t, shelf.v2, "2.0.0", 2), "--json")
	var up struct {
		Action string `json:"action"`
		Kept   struct {
			Version string `json:"version"`
		} `json:"kept"`
		Daemon struct {
			State   string `json:"state"`
			Message string `json:"message"`
		} `json:"daemon"`
	}
	if err := json.Unmarshal([]byte(out), &up); err != nil {
		t.Fatalf("update --json: %v\n%s", err, out)
	}
	if up.Action != "updated" || up.Kept.Version != "1.0.0" || up.Daemon.State != "running" || !strings.Contains(up.Daemon.Message, "serves shelf 2.0.0") {
		t.Fatalf("update: %+v", up)
	}
	if x := e.Extension("shelf"); x.State != "running" || x.Version != "2.0.0" {
		t.Fatalf("after the update the daemon runs %+v", x)
	}
	out, _ = want(t, e, 0, "extension", "list")
	if !regexpLine(out, `^shelf\s+2\.0\.0\s+installed\s+running\s.*1 entry type\s+-\s+1\.0\.0\s`) {
		t.Errorf("list does not show shelf 2.0.0 with 1.0.0 kept:\n%s", out)
	}
	// A lower kv_version than the installed release's is refused.
	_, errOut = want(t, e, 1, "extension", "update", shelfDir(t, shelf.v1, "1.0.0", 1))
	if !strings.Contains(errOut, protocol.CodeKVDowngrade) || !strings.Contains(errOut, "kv_version 1, lower than the installed release's 2") {
		t.Errorf("an update to a lower kv_version: %s", errOut)
	}

	// Rollback: on disk it is done, but the daemon refuses v1 now.
	out, errOut = want(t, e, 1, "extension", "rollback", "shelf")
	if !strings.Contains(out, "kv_downgrade") || !strings.Contains(out, "remedy:") || !strings.Contains(errOut, "on disk") {
		t.Errorf("a rollback over a migrated layout:\n%s\n%s", out, errOut)
	}
	x := e.Extension("shelf")
	if x.Code != protocol.CodeKVDowngrade || x.Remedy == "" || !strings.Contains(x.LastError, "layout 2") {
		t.Fatalf("the rolled-back shelf in the daemon: %+v", x)
	}
	e.Stop()
	if layout(t, e) != 2 {
		t.Fatal("the store does not hold layout 2 after v2's configure")
	}
	serveOut := e.ServeFails("--config", e.Config)
	if !strings.Contains(serveOut, "shelf") || !strings.Contains(serveOut, protocol.CodeKVDowngrade) {
		t.Errorf("serve with the rolled-back shelf:\n%s", serveOut)
	}
	out, _ = want(t, e, 0, "extension", "list")
	if !regexpLine(out, `^shelf\s+1\.0\.0\s.*\s2\.0\.0\s`) {
		t.Errorf("offline list after the rollback:\n%s", out)
	}

	// Roll forward: rollback again is the update again.
	want(t, e, 0, "extension", "rollback", "shelf")
	e.Start()
	if x := e.Extension("shelf"); x.State != "running" || x.Version != "2.0.0" {
		t.Fatalf("rolled forward: %+v", x)
	}

	// Remove: refused while the config uses shelf, allowed once not.
	_, errOut = want(t, e, 1, "extension", "remove", "shelf")
	if !strings.Contains(errOut, "/scopes/0/entries/0") || !strings.Contains(errOut, "--force") {
		t.Errorf("removing a package the config uses: %s", errOut)
	}
	if _, err := os.Stat(filepath.Join(installedDir(e), "shelf")); err != nil {
		t.Fatal("a refused removal removed the package")
	}
	e.WriteConfig(daemontest.Config)
	want(t, e, 0, "config", "apply")
	out, _ = want(t, e, 0, "extension", "remove", "shelf")
	if !strings.Contains(out, "removed shelf") || !strings.Contains(out, "kept its durable state") {
		t.Errorf("remove: %s", out)
	}
	for _, gone := range []string{"shelf", filepath.Join(".previous", "shelf")} {
		if _, err := os.Stat(filepath.Join(installedDir(e), gone)); err == nil {
			t.Errorf("remove left %s", gone)
		}
	}
	e.Stop()
	if layout(t, e) != 2 {
		t.Error("remove deleted the package's recorded KV layout")
	}
	if _, err := os.Stat(filepath.Join(e.State, "extensions", "shelf")); err != nil {
		t.Errorf("remove deleted the package's state directory: %v", err)
	}
	_, errOut = want(t, e, 1, "extension", "rollback", "shelf")
	if !strings.Contains(errOut, protocol.CodeInstallState) {
		t.Errorf("a rollback with nothing kept: %s", errOut)
	}
}

// layout is the KV layout the store records for shelf; the daemon must
// not be running.
func layout(t *testing.T, e *daemontest.Env) int {
	t.Helper()
	db, err := pebblekv.Open(filepath.Join(e.State, "store"), &pebblekv.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	v := 0
	if err := db.View(func(r *pebblekv.Reader) error {
		var err error
		v, _, err = r.KVLayoutVersion("shelf")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return v
}

func regexpLine(text, pattern string) bool {
	re := regexp.MustCompile(pattern)
	for _, l := range strings.Split(text, "\n") {
		if re.MatchString(l) {
			return true
		}
	}
	return false
}

// TestBadArchivesAreRefused: each refusal kind through the binary, each
// naming what is wrong, and nothing installed or left staged.
func TestBadArchivesAreRefused(t *testing.T) {
	good := func(t *testing.T) []entry { return shelfEntries(t, shelf.v1, "1.0.0", 1) }
	many := func(t *testing.T) []entry {
		es := good(t)
		for i := range 10001 {
			es = append(es, entry{name: fmt.Sprintf("shelf/f%05d", i), typ: tar.TypeReg})
		}
		return es
	}
	cases := []struct {
		name    string
		entries func(t *testing.T) []entry
		// args are added to install; {sum} is the archive's digest and
		// {url} serves it over plain http.
		args []string
		want []string
	}{
		{"a path escaping the directory", func(t *testing.T) []entry {
			return append(good(t), entry{name: "shelf/../evil", typ: tar.TypeReg, body: []byte("x")})
		}, nil, []string{`"shelf/../evil"`, "escapes"}},
		{"an absolute path", func(t *testing.T) []entry {
			return append(good(t), entry{name: "/tmp/evil", typ: tar.TypeReg, body: []byte("x")})
		}, nil, []string{`"/tmp/evil"`, "absolute"}},
		{"a symbolic link", func(t *testing.T) []entry {
			return append(good(t), entry{name: "shelf/passwd", typ: tar.TypeSymlink, link: "/etc/passwd"})
		}, nil, []string{`"shelf/passwd"`, "link"}},
		{"a hard link", func(t *testing.T) []entry {
			return append(good(t), entry{name: "shelf/again", typ: tar.TypeLink, link: "shelf/shelf-extension"})
		}, nil, []string{`"shelf/again"`, "link"}},
		{"a fifo", func(t *testing.T) []entry {
			return append(good(t), entry{name: "shelf/pipe", typ: tar.TypeFifo})
		}, nil, []string{`"shelf/pipe"`, "special file"}},
		{"a device", func(t *testing.T) []entry {
			return append(good(t), entry{name: "shelf/null", typ: tar.TypeChar})
		}, nil, []string{`"shelf/null"`, "special file"}},
		{"two top-level entries", func(t *testing.T) []entry {
			return append(good(t), entry{name: "other/x", typ: tar.TypeReg, body: []byte("x")})
		}, nil, []string{`"other/x"`, "second top-level"}},
		{"too many entries", many, nil, []string{"more than 10000 entries"}},
		{"a digest that does not match", good, []string{"--sha256", strings.Repeat("ab", 32)},
			[]string{strings.Repeat("ab", 32), "SHA-256"}},
		{"plain http without a digest", good, []string{"{url}"}, []string{"plain http", "--sha256"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := daemontest.New(t, bins)
			file, _ := archive(t, c.entries(t))
			srv := httptest.NewServer(http.FileServer(http.Dir(filepath.Dir(file))))
			defer srv.Close()
			args := []string{"extension", "install", file}
			if len(c.args) > 0 && c.args[0] == "{url}" {
				args[2] = srv.URL + "/" + filepath.Base(file)
			} else {
				args = append(args, c.args...)
			}
			_, errOut := want(t, e, 1, args...)
			for _, w := range append([]string{protocol.CodeInvalidArchive}, c.want...) {
				if !strings.Contains(errOut, w) {
					t.Errorf("the refusal does not say %q: %s", w, errOut)
				}
			}
			noShelf(t, e)
			if _, err := os.Stat("/tmp/evil"); err == nil {
				t.Error("an entry was written outside the package directory")
			}
		})
	}
	// Negative control: the good entries, with macOS metadata beside the
	// package directory and a matching digest fetched over http, install.
	e := daemontest.New(t, bins)
	file, sum := archive(t, append(good(t), entry{name: "._shelf", typ: tar.TypeReg, body: []byte("mac")}))
	srv := httptest.NewServer(http.FileServer(http.Dir(filepath.Dir(file))))
	defer srv.Close()
	want(t, e, 0, "extension", "install", srv.URL+"/"+filepath.Base(file), "--sha256", sum)
	if _, err := os.Stat(filepath.Join(installedDir(e), "shelf", "shelf-extension")); err != nil {
		t.Fatal(err)
	}
}

// TestInstallRefusesConflictsAndForeignBuilds: a package claiming a name
// another package registers is refused naming the name and both owners, a
// command built for another platform naming both platforms; a package
// named like a bundled one replaces it.
func TestInstallRefusesConflictsAndForeignBuilds(t *testing.T) {
	e := daemontest.New(t, bins)
	// The probe declares the connection type probe-api; a package named
	// probe-api may declare the entry type of its own name, which is the
	// same config type.
	dir := filepath.Join(t.TempDir(), "probe-api")
	mustMkdir(t, dir)
	copyFile(t, shelf.v1, filepath.Join(dir, "shelf-extension"), 0o755)
	conflicting := `{"name": "probe-api", "protocol": [1], "command": ["shelf-extension"], "provides": {"extensions": [{"type": "probe-api"}]}}`
	if err := os.WriteFile(filepath.Join(dir, protocol.ManifestFile), []byte(conflicting), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut := want(t, e, 1, "extension", "install", dir)
	for _, w := range []string{protocol.CodeRegistrationConflict, `config type "probe-api"`, "probe-api and probe"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("the conflict refusal does not say %q: %s", w, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(installedDir(e), "probe-api")); err == nil {
		t.Error("the conflicting package was installed")
	}
	noShelf(t, e)

	foreign := shelfDir(t, shelf.foreign, "1.0.0", 1)
	_, errOut = want(t, e, 1, "extension", "install", foreign)
	if !strings.Contains(errOut, protocol.CodeWrongPlatform) || !strings.Contains(errOut, runtime.GOOS+"/"+runtime.GOARCH) || !strings.Contains(errOut, "linux/") {
		t.Errorf("a foreign build: %s", errOut)
	}
	noShelf(t, e)

	// A package named like the bundled hello replaces it.
	hello := filepath.Join(t.TempDir(), "hello")
	mustMkdir(t, hello)
	copyFile(t, shelf.v1, filepath.Join(hello, "hello-extension"), 0o755)
	manifest := `{"name": "hello", "version": "9.0.0", "protocol": [1], "command": ["hello-extension"], "provides": {"extensions": [{"type": "hello"}]}}`
	if err := os.WriteFile(filepath.Join(hello, protocol.ManifestFile), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := want(t, e, 0, "extension", "install", hello)
	if !strings.Contains(out, "replaces the bundled hello") {
		t.Errorf("installing a bundled package's name: %s", out)
	}
	// Negative control: the plain shelf installs.
	want(t, e, 0, "extension", "install", shelfDir(t, shelf.v1, "1.0.0", 1))
}

// TestInstallCommandsRefuseBadInput: usage errors exit 2 and say what to
// change.
func TestInstallCommandsRefuseBadInput(t *testing.T) {
	e := daemontest.New(t, bins)
	dir := shelfDir(t, shelf.v1, "1.0.0", 1)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"extension", "install", dir, "--sha256", "xyz"}, "64 hex digits"},
		{[]string{"extension", "install", dir, "--sha256", strings.Repeat("ab", 32)}, "drop --sha256"},
		{[]string{"extension", "install", filepath.Join(dir, "missing")}, "no such package directory or archive"},
		{[]string{"extension", "remove"}, "usage"},
	} {
		_, errOut := want(t, e, 2, c.args...)
		if !strings.Contains(errOut, c.want) {
			t.Errorf("%v: %s", c.args, errOut)
		}
	}
	noShelf(t, e)
}
