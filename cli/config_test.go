package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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

func TestConfigInitWritesAnOwnerOnlyStarterAndKeepsAnExistingFile(t *testing.T) {
	const old = `{"scopes":[]}`
	cases := []struct {
		name     string
		existing string // the file's text before, "" for none
		force    bool
		wantCode int
		wantSays string // in stdout on success, stderr on failure
		wantKept bool
	}{
		{name: "a new file in a new directory", wantCode: 0, wantSays: "open-conduit serve --config "},
		{name: "an existing file is refused and kept", existing: old, wantCode: 1, wantSays: "--force", wantKept: true},
		{name: "an existing file is replaced with --force", existing: old, force: true, wantCode: 0, wantSays: "wrote "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "conf")
			file := filepath.Join(dir, "config.json")
			if c.existing != "" {
				os.MkdirAll(dir, 0o755)
				if err := os.WriteFile(file, []byte(c.existing), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			args := []string{"config", "init", "--config", file}
			if c.force {
				args = append(args, "--force")
			}
			code, out, errs := run(args...)
			if code != c.wantCode {
				t.Fatalf("code %d, want %d\nstdout %q\nstderr %q", code, c.wantCode, out, errs)
			}
			if said := out + errs; !strings.Contains(said, c.wantSays) || !strings.Contains(said, file) {
				t.Errorf("want the output to name %s and say %q: %q", file, c.wantSays, said)
			}
			data, _ := os.ReadFile(file)
			if kept := string(data) == old; kept != c.wantKept {
				t.Fatalf("file kept = %v, want %v:\n%s", kept, c.wantKept, data)
			}
			if c.wantKept {
				return
			}
			if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("the config file's mode: %v %v, want 0600", fi.Mode(), err)
			}
			if c.existing == "" {
				if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
					t.Errorf("the new directory's mode: %v %v, want 0700", fi.Mode(), err)
				}
			}
			// What init writes is a config that passes config check.
			if code, out, errs := run("config", "check", "--config", file); code != 0 {
				t.Fatalf("config check of the starter: %d\n%s%s\n%s", code, out, errs, data)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("init left files beside the config: %v", entries)
			}
		})
	}
}
