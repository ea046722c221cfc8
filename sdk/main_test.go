package sdk_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
)

// mainEnv makes the test binary run sdk.Main on the extension it names
// instead of the tests, so Run's exit codes and streams are a real
// process's.
const mainEnv = "SDK_TEST_MAIN"

// mains are the extensions the test binary can stand in for.
var mains = map[string]func() *sdk.Extension{
	"weather": func() *sdk.Extension {
		var calls atomic.Int32
		x := weather(&calls)
		sdk.Certification([]byte(`{"entries":[{"type":"weather"}]}`))(x)
		return x
	},
	"badcert": func() *sdk.Extension {
		return sdk.New("badcert", sdk.Certification([]byte(`{not json`)))
	},
	"badmanifest": func() *sdk.Extension { return sdk.New("Bad Name") },
}

func TestMain(m *testing.M) {
	if name := os.Getenv(mainEnv); name != "" {
		sdk.Main(mains[name]())
	}
	os.Exit(m.Run())
}

// runMain runs the test binary as the named extension's binary with args,
// stdin from a pipe that is closed at once (the daemon hanging up).
func runMain(t *testing.T, name string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), mainEnv+"="+name)
	cmd.Stdin = strings.NewReader("")
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("running %s: %v", name, err)
	}
	return code, out.String(), errs.String()
}

// TestRunAnswersPackageCommandsWithExitCodes: the binary Main builds
// answers the package commands, help and version with status 0, serves
// until stdin closes with status 0, refuses an unknown command with the
// usage and status 2, and fails with 1 and a message when it cannot do
// what it was asked.
func TestRunAnswersPackageCommandsWithExitCodes(t *testing.T) {
	cases := []struct {
		name, ext string
		args      []string
		code      int
		stdout    string // a substring of stdout ("" for empty)
		stderr    string // a substring of stderr ("" for empty)
	}{
		{"manifest", "weather", []string{"package-manifest"}, 0, `"name": "weather"`, ""},
		{"certification", "weather", []string{"package-certification"}, 0, `"entries"`, ""},
		{"no certification prints {}", "badmanifest", []string{"package-certification"}, 0, "{}", ""},
		{"help", "weather", []string{"help"}, 0, "open-conduit extension dev DIR", ""},
		{"--help", "weather", []string{"--help"}, 0, "package-manifest", ""},
		{"-h", "weather", []string{"-h"}, 0, "weather-extension", ""},
		{"version", "weather", []string{"version"}, 0, "weather 0.1.0\n", ""},
		{"serving ends cleanly when stdin closes", "weather", nil, 0, "", ""},
		{"unknown command", "weather", []string{"serve"}, 2, "", `unknown command "serve"`},
		{"certification that is not JSON", "badcert", []string{"package-certification"}, 1, "", "not JSON"},
		// Installing, discovery, extension dev and sdktest check the
		// manifest; serving does not check it again at every start.
		{"an invalid manifest is served unchecked", "badmanifest", nil, 0, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runMain(t, tc.ext, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.code, errs)
			}
			if tc.stdout == "" && out != "" || !strings.Contains(out, tc.stdout) {
				t.Fatalf("stdout %q, want %q", out, tc.stdout)
			}
			if tc.stderr == "" && errs != "" || !strings.Contains(errs, tc.stderr) {
				t.Fatalf("stderr %q, want %q", errs, tc.stderr)
			}
			if tc.code == 2 && !strings.Contains(errs, "Usage: weather-extension") {
				t.Fatalf("misuse without the usage: %q", errs)
			}
		})
	}
	// The printed manifest is the extension's, and validates.
	_, out, _ := runMain(t, "weather", "package-manifest")
	m, err := protocol.ParseAndValidateManifest([]byte(out))
	var calls atomic.Int32
	if err != nil || !m.SemanticallyEqual(weather(&calls).Manifest) {
		t.Fatalf("printed manifest %v:\n%s", err, out)
	}
}

// TestRunByHandInATerminalSaysWhatItIs: run with a terminal on stdin (a
// pty from util-linux's script), the binary says what it is and how to run
// it on stderr and exits 1 instead of waiting for protocol messages.
func TestRunByHandInATerminalSaysWhatItIs(t *testing.T) {
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("needs util-linux's script on PATH for a pty")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// script -e returns the child's status; -q drops its banner; the
	// typescript goes nowhere.
	cmd := exec.CommandContext(ctx, script, "-qec", os.Args[0], os.DevNull)
	cmd.Env = append(os.Environ(), mainEnv+"=weather")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("run in a terminal: %v, want exit status 1\n%s", err, out)
	}
	for _, want := range []string{
		"weather 0.1.0 is an Open Conduit extension",
		"speaks JSON-RPC on its stdin and stdout",
		"open-conduit extension dev DIR",
		"open-conduit extension install DIR",
		"weather-extension package-manifest",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the terminal shows no %q:\n%s", want, out)
		}
	}
}
