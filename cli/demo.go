package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/spf13/pflag"

	"github.com/open-conduit/open-conduit/extensions/hello"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk/memhost"
	"github.com/open-conduit/open-conduit/session"
)

func demoCommand() *command {
	var (
		names []string
		state string
	)
	return &command{
		name:  "demo",
		short: "start the bundled hello extension as a process, call it, and show what happened",
		long: "Start the bundled extension \"hello\" as its own process (this binary, run as\n" +
			"'open-conduit extension-run hello'), run the handshake, call its operation with\n" +
			"each --name, run its doctor check, show a refused input, read the KV it wrote\n" +
			"through the host, and stop it. The host side keeps KV in memory; 'serve' runs\n" +
			"the real daemon.",
		flags: func(fs *pflag.FlagSet) {
			fs.StringSliceVar(&names, "name", []string{"world", "conduit", "world"}, "names to greet, in order (repeat or comma-separate)")
			fs.StringVar(&state, "state", "", "directory for the extension's state and log (default: a temporary one, removed afterwards)")
		},
		run: func(r *runner, _ []string) error { return runDemo(r, names, state) },
	}
}

func runDemo(r *runner, names []string, state string) error {
	out := r.stdout
	kept := state != ""
	if state == "" {
		tmp, err := os.MkdirTemp("", "open-conduit-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		state = tmp
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this executable, which serves the extension: %w", err)
	}
	ext := hello.Extension()
	pkgDir := filepath.Join(state, "packages", hello.Name)
	if err := writeManifest(pkgDir, ext.Manifest); err != nil {
		return err
	}
	host := memhost.New(hello.Name)
	logPath := filepath.Join(state, "logs", "extensions", hello.Name+".log")

	fmt.Fprintf(out, "Starting the bundled extension %q as its own process\n", hello.Name)
	start := time.Now()
	s, err := session.Start(r.ctx, session.Package{Dir: pkgDir, Manifest: ext.Manifest}, session.Options{
		StateDir: filepath.Join(state, "extensions", hello.Name),
		LogPath:  logPath,
		Self:     self,
		Host:     host.Table(),
		HostInfo: protocol.HostInfo{Name: "open-conduit", Version: Version},
	})
	if err != nil {
		return err
	}
	defer s.Close(context.Background())
	st := s.Status()
	fmt.Fprintf(out, "  command   %s extension-run %s (pid %d)\n", self, hello.Name, st.PID)
	fmt.Fprintf(out, "  handshake protocol %d, manifest %s %s matches %s, in %s\n\n",
		st.Protocol, ext.Manifest.Name, ext.Manifest.Version, protocol.ManifestFile, round(time.Since(start)))

	for _, name := range names {
		demoCall(r, s, "hello.greet", map[string]any{"name": name})
	}
	demoCall(r, s, "hello.greet", map[string]any{"nmae": "typo"})

	var check protocol.CheckRunResult
	t := time.Now()
	if err := s.Call(r.ctx, protocol.MethodCheckRun, protocol.CheckRunParams{Check: "hello-kv"}, &check); err != nil {
		fmt.Fprintf(out, "→ check.run hello-kv\n  ✗ %v\n", err)
	} else {
		fmt.Fprintf(out, "→ check.run hello-kv\n  ← %s: %s (%s)\n", check.Status, check.Detail, round(time.Since(t)))
	}

	fmt.Fprintf(out, "\nKV the extension wrote through the host (kv.commit batches):\n")
	for _, ns := range []string{hello.Namespace} {
		kv := host.KV(ns)
		keys := make([]string, 0, len(kv))
		for k := range kv {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(out, "  %s/%s = %s\n", ns, k, kv[k])
		}
	}
	pid := st.PID
	if err := s.Close(r.ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nStopped: shutdown answered, stdin closed, pid %d exited.\n", pid)
	if kept {
		fmt.Fprintf(out, "Its stderr log: %s\n", logPath)
	} else {
		fmt.Fprintf(out, "Its state and log were temporary; pass --state DIR to keep them.\n")
	}
	return nil
}

// demoCall calls one operation and prints the exchange.
func demoCall(r *runner, s *session.Session, op string, input map[string]any) {
	data, _ := json.Marshal(input)
	fmt.Fprintf(r.stdout, "→ operation.call %s %s\n", op, data)
	var res protocol.OperationCallResult
	t := time.Now()
	err := s.Call(r.ctx, protocol.MethodOperationCall, protocol.OperationCallParams{
		Operation: op, Input: protocol.Payload{Data: data},
		Authority: protocol.Authority{Caller: "demo"},
	}, &res)
	var pe *protocol.Error
	switch {
	case errors.As(err, &pe):
		fmt.Fprintf(r.stdout, "  ✗ refused %s: %s (%s)\n", pe.Code, pe.Message, round(time.Since(t)))
	case err != nil:
		fmt.Fprintf(r.stdout, "  ✗ %v\n", err)
	default:
		fmt.Fprintf(r.stdout, "  ← %s (%s)\n", strings.TrimSpace(string(res.Output.Data)), round(time.Since(t)))
	}
}

func round(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return d.Round(time.Microsecond)
	}
	return d.Round(10 * time.Microsecond)
}

func writeManifest(dir string, m *protocol.Manifest) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := m.MarshalIndent()
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, protocol.ManifestFile), b, 0o644)
}
