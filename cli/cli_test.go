package cli

import (
	"bytes"
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
