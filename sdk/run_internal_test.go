package sdk

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestRunServesOnlyWhenStdinIsNotATerminal: with no argument, Run serves
// when stdin is not a terminal and, when it is, says what the binary is and
// how to run it on stderr and returns 1 without serving.
func TestRunServesOnlyWhenStdinIsNotATerminal(t *testing.T) {
	cases := []struct {
		name     string
		terminal bool
		serveErr error
		code     int
		served   bool
		stderr   string
	}{
		{"a pipe serves", false, nil, 0, true, ""},
		{"a failed serve is status 1, said", false, errors.New("stdin vanished"), 1, true, "acme: stdin vanished"},
		{"a terminal explains", true, nil, 1, false, "acme 1.0.0 is an Open Conduit extension"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			served := false
			env := runEnv{stdout: &stdout, stderr: &stderr,
				terminal: func() bool { return tc.terminal },
				serve:    func(*Extension) error { served = true; return tc.serveErr }}
			code := run(New("acme", Version("1.0.0")), nil, env)
			if code != tc.code || served != tc.served {
				t.Fatalf("code %d served %v, want %d %v", code, served, tc.code, tc.served)
			}
			if tc.stderr == "" && stderr.Len() > 0 || !strings.Contains(stderr.String(), tc.stderr) {
				t.Fatalf("stderr %q, want %q", stderr.String(), tc.stderr)
			}
			if stdout.Len() > 0 {
				t.Fatalf("stdout %q: only the protocol may use it", stdout.String())
			}
		})
	}
}
