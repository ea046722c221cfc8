package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/open-conduit/open-conduit/protocol"
)

func run(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestHelpOnEveryCommand(t *testing.T) {
	for _, path := range [][]string{{}, {"demo"}, {"extension-run"}, {"version"}} {
		args := append(append([]string{}, path...), "--help")
		code, out, errs := run(args...)
		if code != 0 || errs != "" || !strings.Contains(out, "Usage:") || !strings.Contains(out, "--help") {
			t.Errorf("%v: code %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	code, out, _ := run("help", "demo")
	if code != 0 || !strings.Contains(out, "--name") {
		t.Errorf("help demo: %d %q", code, out)
	}
	code, out, _ = run()
	if code != 0 || !strings.Contains(out, "extension-run") || !strings.Contains(out, "demo") {
		t.Errorf("no arguments should list the commands: %d %q", code, out)
	}
}

func TestMisuseIsOneLineErrorAndNonZeroExit(t *testing.T) {
	cases := [][]string{
		{"frobnicate"},
		{"demo", "--no-such-flag"},
		{"version", "extra"},
		{"extension-run", "no-such-extension"},
		{"extension-run", "hello", "package-nonsense"},
	}
	for _, args := range cases {
		code, out, errs := run(args...)
		if code == 0 || out != "" {
			t.Errorf("%v: code %d stdout %q", args, code, out)
		}
		first := strings.SplitN(errs, "\n", 2)[0]
		if !strings.HasPrefix(first, "open-conduit") || !strings.Contains(errs, "--help") {
			t.Errorf("%v: stderr %q", args, errs)
		}
	}
}

func TestExtensionRunPrintsAValidManifest(t *testing.T) {
	code, out, errs := run("extension-run", "hello", "package-manifest")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errs)
	}
	m, err := protocol.ParseAndValidateManifest([]byte(out))
	if err != nil {
		t.Fatalf("the printed manifest does not validate: %v\n%s", err, out)
	}
	if m.Name != "hello" || !protocol.IsHostRun(m.Command, "hello") {
		t.Fatalf("manifest %+v", m)
	}
	code, out, _ = run("extension-run")
	if code != 0 || strings.TrimSpace(out) != "hello" {
		t.Fatalf("listing: %d %q", code, out)
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := run("version")
	if code != 0 || !strings.Contains(out, "protocol 1") {
		t.Fatalf("%d %q", code, out)
	}
}

func TestClientCommandsWithoutADaemonSaySoInOneLine(t *testing.T) {
	state := t.TempDir()
	for _, args := range [][]string{
		{"events", "list", "--state", state},
		{"doctor", "--state", state},
		{"config", "apply", "--state", state, "--config", "/dev/null"},
	} {
		code, out, errs := run(args...)
		if args[0] == "config" {
			// /dev/null is not a config, but the daemon is what is missing.
			code, out, errs = run(append(args[:len(args)-1], writeConfig(t))...)
		}
		if code != 1 || out != "" || strings.Count(strings.TrimSpace(errs), "\n") != 0 ||
			!strings.Contains(errs, "open-conduit serve --state "+state) {
			t.Errorf("%v: code %d stdout %q stderr %q", args, code, out, errs)
		}
	}
	// extension list falls back to offline discovery, and says no daemon runs.
	code, out, errs := run("extension", "list", "--state", state, "--config", writeConfig(t))
	if code != 0 || !strings.Contains(out, "hello") || !strings.Contains(out, "not running") || !strings.Contains(errs, "open-conduit serve") {
		t.Errorf("offline list: %d %q %q", code, out, errs)
	}
}

func writeConfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(`{"scopes":[{"id":"demo","entries":[{"name":"h","type":"hello"}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestConfigCheckPrintsEveryProblemWithItsPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	bad := `{"scopes":[{"id":"demo","entries":[{"name":"h","type":"nope"}],"routes":[{"handler":"ghost"}]}]}`
	os.WriteFile(path, []byte(bad), 0o644)
	code, out, errs := run("config", "check", "--config", path)
	if code != 1 || !strings.Contains(out, "/scopes/0/entries/0/type") || !strings.Contains(out, "/scopes/0/routes/0/handler") || !strings.Contains(errs, "2 error(s)") {
		t.Fatalf("code %d\n%s\n%s", code, out, errs)
	}
	code, out, _ = run("config", "check", "--config", writeConfig(t), "--json")
	if code != 0 || !strings.Contains(out, `"ok": true`) {
		t.Fatalf("a good config: %d %s", code, out)
	}
	// hello, started for validate alone, refuses an entry it cannot use.
	refused := filepath.Join(t.TempDir(), "config.json")
	os.WriteFile(refused, []byte(`{"scopes":[{"id":"demo","entries":[{"name":"h","type":"hello","config":{"greting":1}}]}]}`), 0o644)
	code, out, _ = run("config", "check", "--config", refused)
	if code != 1 || !strings.Contains(out, "/scopes/0/entries/0/config") || !strings.Contains(out, "invalid_config") {
		t.Fatalf("a config hello refuses: %d %s", code, out)
	}
	code, _, errs = run("config", "check", "--config", filepath.Join(t.TempDir(), "missing.json"))
	if code != 1 || !strings.Contains(errs, "--config") {
		t.Fatalf("missing file: %d %s", code, errs)
	}
}
