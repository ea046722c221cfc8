package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/open-conduit/open-conduit/extensions"
	"github.com/open-conduit/open-conduit/protocol"
)

func run(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

// commandFlags is every command's own flags (--help aside): help must list
// each, and no shared flag the command does not take.
var commandFlags = map[string][]string{
	"":                   nil,
	"serve":              {"config", "state", "log-level", "log-format", "webhook-addr"},
	"status":             {"state", "json"},
	"tui":                {"state", "config", "embedded", "webhook-addr"},
	"extension":          nil,
	"extension new":      {"json", "dir", "module", "replace"},
	"extension list":     {"state", "config", "json"},
	"extension call":     {"state", "json", "scope", "input"},
	"extension restart":  {"state", "json", "wait"},
	"extension rescan":   {"state", "json"},
	"extension install":  {"state", "config", "json", "sha256"},
	"extension update":   {"state", "config", "json", "sha256"},
	"extension rollback": {"state", "config", "json"},
	"extension remove":   {"state", "config", "json", "force"},
	"extension check":    {"json", "allow"},
	"extension inspect":  {"json"},
	"extension dev":      {"entry", "secret"},
	"extension tap":      {"state", "json", "follow", "after"},
	"logs":               {"state", "json", "tail", "follow"},
	"events":             nil,
	"events list":        {"state", "json", "after", "limit", "scope", "follow"},
	"events show":        {"state", "json"},
	"events emit":        {"state", "json", "scope", "type", "data"},
	"work":               nil,
	"work list":          {"state", "json", "scope", "status", "after", "limit"},
	"work show":          {"state", "json"},
	"work inputs":        {"state", "json", "after", "limit"},
	"work cancel":        {"state", "json", "reason"},
	"work artifacts":     {"state", "json", "get", "out"},
	"work artifact":      {"state", "json", "out"},
	"work waits":         {"state", "json", "after", "limit"},
	"work interrupt":     {"state", "json"},
	"work inject":        {"state", "json"},
	"work stop":          {"state", "json"},
	"work live":          {"state", "json", "tail"},
	"route":              {"state", "json", "trace", "samples", "scope", "type", "data"},
	"timers":             nil,
	"timers list":        {"state", "json", "after", "limit"},
	"ingress":            nil,
	"call":               {"json", "input", "request-id"},
	"ingress sources":    {"state", "json"},
	"ingress reconcile":  {"state", "json"},
	"doctor":             {"state", "json"},
	"config":             nil,
	"config init":        {"config", "force"},
	"config check":       {"config", "json"},
	"config apply":       {"state", "config", "json"},
	"config show":        {"state", "json"},
	"demo":               {"name", "state"},
	"extension-run":      nil,
	"version":            nil,
}

// paths lists every command in the tree by its path below the root.
func paths(c *command, prefix string) []string {
	out := []string{prefix}
	for _, s := range c.subs {
		out = append(out, paths(s, strings.TrimSpace(prefix+" "+s.name))...)
	}
	return out
}

// listsFlag reports whether help has a line for --name in its flag list.
func listsFlag(help, name string) bool {
	return regexp.MustCompile(`(?m)^\s+(-\w, )?--` + regexp.QuoteMeta(name) + `\b`).MatchString(help)
}

func TestHelpOnEveryCommandListsItsFlags(t *testing.T) {
	all := paths(tree(), "")
	for _, path := range all {
		if _, ok := commandFlags[path]; !ok {
			t.Errorf("the command %q is not in commandFlags: add the flags its help must list", path)
		}
	}
	for path, flags := range commandFlags {
		t.Run(strings.ReplaceAll(path, " ", "_"), func(t *testing.T) {
			if !slices.Contains(all, path) {
				t.Fatalf("no command %q in the tree", path)
			}
			args := append(strings.Fields(path), "--help")
			code, out, errs := run(args...)
			if code != 0 || errs != "" || !strings.Contains(out, "Usage:\n  "+strings.TrimSpace("open-conduit "+path)) {
				t.Fatalf("code %d, stdout %q, stderr %q", code, out, errs)
			}
			for _, f := range append(flags, "help") {
				if !listsFlag(out, f) {
					t.Errorf("help does not list --%s:\n%s", f, out)
				}
			}
			// Negative control: a shared flag the command does not take is
			// not offered.
			for _, shared := range []string{"state", "config", "json"} {
				if !slices.Contains(flags, shared) && listsFlag(out, shared) {
					t.Errorf("help lists --%s, which the command does not take:\n%s", shared, out)
				}
			}
		})
	}
	code, out, _ := run("help", "demo")
	if code != 0 || !strings.Contains(out, "--name") {
		t.Errorf("help demo: %d %q", code, out)
	}
}

func TestMisuseExitsTwoWithOneLineNamingTheCommand(t *testing.T) {
	cases := []struct {
		args []string
		says string
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"extension", "frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"demo", "--no-such-flag"}, "no-such-flag"},
		{[]string{"version", "extra"}, "takes no arguments"},
		{[]string{"extension", "restart"}, "usage: open-conduit extension restart NAME"},
		{[]string{"logs", "a", "b"}, "at most 1"},
		{[]string{"logs", "hello", "--tail", "0"}, "--tail"},
		{[]string{"events", "list", "--limit", "0"}, "--limit must be between 1 and"},
		{[]string{"extension", "restart", "hello", "--wait", "-1s"}, "--wait"},
		{[]string{"extension", "call", "hello", "op", "--input", "[1"}, "--input is not a JSON object"},
		{[]string{"serve", "--log-level", "nonsense"}, "debug, info, warn, error"},
		{[]string{"serve", "--log-format", "xml"}, "text, json"},
		{[]string{"extension-run", "no-such-extension"}, "no first-party extension"},
		{[]string{"extension-run", "hello", "package-nonsense"}, "unknown subcommand"},
		{[]string{"events", "show"}, "usage: open-conduit events show ID"},
		{[]string{"events", "emit"}, "--scope is required"},
		{[]string{"events", "emit", "--scope", "a", "--data", "[1]"}, "--data must be a JSON object"},
		{[]string{"events", "emit", "--scope", "a", "--type", ""}, "--type must not be empty"},
		{[]string{"work", "list", "--limit", "0"}, "--limit must be between 1 and 1000"},
		{[]string{"work", "list", "--status", "done"}, "--status must be one of pending"},
		{[]string{"work", "show"}, "usage: open-conduit work show ID"},
		{[]string{"work", "inputs"}, "usage: open-conduit work inputs ID"},
		{[]string{"work", "inputs", "w_x", "--limit", "0"}, "--limit must be between 1 and 1000"},
		{[]string{"work", "inputs", "w_x", "--limit", "1001"}, "--limit must be between 1 and 1000"},
		{[]string{"work", "inputs", "w_x", "--after", "-1"}, "--after"},
		{[]string{"work", "inputs", "w_x", "--after", "x"}, "--after"},
		{[]string{"work", "cancel", "a", "b"}, "at most 1"},
		{[]string{"route", "--scope", "a"}, "exactly one of --trace and --samples"},
		{[]string{"route", "--trace", "--samples", "--scope", "a"}, "exactly one of --trace and --samples"},
		{[]string{"route", "--trace", "--type", "t"}, "--scope is required"},
		{[]string{"route", "--trace", "--scope", "a"}, "--type is required with --trace"},
		{[]string{"route", "--trace", "--scope", "a", "--type", "t", "--data", "{"}, "--data must be a JSON object"},
		{[]string{"timers", "list", "--limit", "1001"}, "--limit must be between 1 and 1000"},
		{[]string{"ingress", "reconcile"}, "usage: open-conduit ingress reconcile SOURCE"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, "_"), func(t *testing.T) {
			code, out, errs := run(c.args...)
			if code != 2 || out != "" {
				t.Fatalf("code %d stdout %q stderr %q", code, out, errs)
			}
			if strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "open-conduit") ||
				!strings.Contains(errs, "--help") || !strings.Contains(errs, c.says) {
				t.Fatalf("want one line naming the command, saying %q and pointing at --help; got %q", c.says, errs)
			}
		})
	}
	// Negative control: a right command line is no misuse.
	if code, _, errs := run("version"); code != 0 || errs != "" {
		t.Fatalf("version: %d %q", code, errs)
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
	if code != 0 || strings.TrimSpace(out) != strings.Join(extensions.Names(), "\n") {
		t.Fatalf("listing: %d %q", code, out)
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := run("version")
	if code != 0 || !strings.Contains(out, "protocol 1") {
		t.Fatalf("%d %q", code, out)
	}
}

func TestClientCommandsWithoutADaemonFailInOneLineNamingServe(t *testing.T) {
	state := t.TempDir()
	cfg := writeConfig(t)
	for _, args := range [][]string{
		{"status"},
		{"tui"},
		{"events", "list"},
		{"events", "list", "--follow"},
		{"doctor"},
		{"logs", "hello"},
		{"extension", "restart", "hello"},
		{"extension", "rescan"},
		{"extension", "call", "hello", "hello.greet"},
		{"config", "apply"},
		{"config", "apply", "--config", cfg},
		{"config", "show"},
		{"work", "list"},
		{"work", "show", "w_x"},
		{"work", "inputs", "w_x"},
		{"work", "cancel", "w_x"},
		{"events", "show", "e_x"},
		{"events", "emit", "--scope", "demo"},
		{"route", "--trace", "--scope", "demo", "--type", "manual.request"},
		{"route", "--samples", "--scope", "demo"},
		{"timers", "list"},
		{"ingress", "sources"},
		{"ingress", "reconcile", "feed/a"},
	} {
		t.Run(strings.Join(args, "_"), func(t *testing.T) {
			code, out, errs := run(append(args, "--state", state)...)
			if code != 1 || out != "" || strings.Count(errs, "\n") != 1 ||
				!strings.Contains(errs, "open-conduit serve --state "+state) {
				t.Errorf("code %d stdout %q stderr %q", code, out, errs)
			}
		})
	}
	// extension list falls back to offline discovery, and says no daemon
	// runs.
	code, out, errs := run("extension", "list", "--state", state, "--config", cfg)
	if code != 0 || !strings.Contains(out, "hello") || !strings.Contains(out, "not running") ||
		!strings.Contains(out, filepath.Join(state, "logs", "extensions", "hello.log")) || !strings.Contains(errs, "open-conduit serve") {
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
