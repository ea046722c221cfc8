package session_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/session"
)

// handshakeSh answers initialize and configure as the package
// scriptPackage writes expects, then waits for the test to create the file
// "go", so what the script does next comes after the handshake.
const handshakeSh = `read -r line
echo '{"jsonrpc":"2.0","id":1,"result":{"protocol_version":1,"manifest":{"name":"broken","protocol":[1],"command":["broken-extension"]}}}'
read -r line
echo '{"jsonrpc":"2.0","id":2,"result":{}}'
while [ ! -f go ]; do sleep 0.01; done
`

// thirteenLines writes 13 numbered lines to stderr.
func thirteenLines() string {
	var b strings.Builder
	for i := 1; i <= 13; i++ {
		fmt.Fprintf(&b, "echo 'stderr line %02d' >&2\n", i)
	}
	return b.String()
}

// lastTwelve are the lines an error must quote of thirteenLines, and the
// one it must not.
var lastTwelve = func() []string {
	var out []string
	for i := 2; i <= 13; i++ {
		out = append(out, fmt.Sprintf("stderr line %02d", i))
	}
	return out
}()

const thirteenthLast = "stderr line 01"

func TestCrashReportNamesTheCause(t *testing.T) {
	cases := []struct {
		name   string
		script string
		want   []string
		reject []string
	}{
		{
			// The extension exits 0 once the host closes its stdin; the
			// protocol error is why, not that exit.
			name:   "stray_stdout",
			script: "echo 'Listening on :8080'\nexec cat >/dev/null\n",
			want:   []string{"broke the protocol", "not a JSON-RPC message", "Listening on :8080"},
			reject: []string{"exited with status"},
		},
		{
			name:   "line_over_the_bound",
			script: "head -c 17000000 /dev/zero | tr '\\000' x\nexec cat >/dev/null\n",
			want:   []string{"broke the protocol", "larger than the size bound", "16777216"},
			reject: []string{"exited with status"},
		},
		{
			// Negative control: a process that ends on its own is reported
			// by its exit status, 0 included.
			name:   "exits_on_its_own",
			script: "exit 0\n",
			want:   []string{"crashed", "exited with status 0"},
			reject: []string{"broke the protocol"},
		},
		{
			name:   "quotes_the_last_12_stderr_lines",
			script: thirteenLines() + "exit 3\n",
			want:   append([]string{"exited with status 3"}, lastTwelve...),
			reject: []string{thirteenthLast},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pkg := scriptPackage(t, handshakeSh+tc.script)
			s := newSession(t, pkg, func(o *session.Options) { o.Backoff.Min = time.Hour })
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(pkg.Dir, "go"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the crash", func() bool { return s.Status().State == session.StateRestarting })
			status := s.Status()
			if status.Code != protocol.CodeTransport || status.Restarts != 1 {
				t.Fatalf("status %+v", status)
			}
			for _, w := range tc.want {
				if !strings.Contains(status.LastError, w) {
					t.Errorf("the crash report does not say %q:\n%s", w, status.LastError)
				}
			}
			for _, r := range tc.reject {
				if strings.Contains(status.LastError, r) {
					t.Errorf("the crash report says %q:\n%s", r, status.LastError)
				}
			}
		})
	}
}

func TestHandshakeErrorQuotesTheLast12StderrLines(t *testing.T) {
	pkg := scriptPackage(t, thirteenLines()+"exit 3\n")
	_, err := session.Start(context.Background(), pkg, session.Options{HandshakeTimeout: slowHandshake})
	if !errors.Is(err, protocol.ErrHandshakeFailed) {
		t.Fatalf("got %v", err)
	}
	for _, w := range append([]string{"exited with status 3"}, lastTwelve...) {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the error does not say %q:\n%s", w, err)
		}
	}
	if strings.Contains(err.Error(), thirteenthLast) {
		t.Errorf("the error quotes more than 12 lines:\n%s", err)
	}
}
