// Package config is the operator's configuration: scopes with their
// entries, routes, bindings and secret references; connections; settings.
// It parses the JSON file strictly, checks it offline against the
// extensions' manifests (every problem with the JSON path it is at), and
// resolves secret references only for the host. It holds no process and no
// store.
package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// File is the name of the config file in the config directory.
const File = "config.json"

// Config is one configuration as the operator wrote it.
type Config struct {
	// Scopes are the units of configuration and data.
	Scopes []Scope `json:"scopes,omitempty"`
	// Connections are named credentials of a package's connection types.
	Connections []Connection `json:"connections,omitempty"`
	// Settings are daemon-wide settings.
	Settings Settings `json:"settings,omitzero"`
}

// Scope is a named unit of configuration and data.
type Scope struct {
	ID string `json:"id"`
	// Disabled starts nothing new in the scope but keeps what it holds.
	Disabled bool `json:"disabled,omitzero"`
	// Entries are configured instances of extension types.
	Entries []Entry `json:"entries,omitempty"`
	// Routes decide, in order, what an Event in the scope becomes.
	Routes []Route `json:"routes,omitempty"`
	// Bindings say how Work runs.
	Bindings []Binding `json:"bindings,omitempty"`
	// SecretRefs name the scope's secrets: name → reference (env:VAR,
	// file:PATH). Only the host reads the references.
	SecretRefs map[string]string `json:"secret_refs,omitempty"`
	// Connections are the connections the scope authorizes its entries and
	// bindings to use.
	Connections []string `json:"connections,omitempty"`
}

// Entry is one configured instance of an extension type.
type Entry struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// Config is the entry's config object, checked by the package.
	Config jsontext.Value `json:"config,omitzero"`
	// Connection names a connection the entry uses.
	Connection string `json:"connection,omitempty"`
	// Secrets select which of the scope's secrets the entry's package may
	// resolve.
	Secrets []string `json:"secrets,omitempty"`
}

// Route sends an Event to a handler with a binding.
type Route struct {
	Handler string         `json:"handler"`
	Binding string         `json:"binding,omitempty"`
	Config  jsontext.Value `json:"config,omitzero"`
}

// Binding is how Work runs.
type Binding struct {
	Name       string         `json:"name"`
	Executor   string         `json:"executor,omitempty"`
	Config     jsontext.Value `json:"config,omitzero"`
	Toolbelt   string         `json:"toolbelt,omitempty"`
	Operations []string       `json:"operations,omitempty"`
	Connection string         `json:"connection,omitempty"`
	PassEnv    []string       `json:"pass_env,omitempty"`
}

// Connection is named credentials of a declared connection type.
type Connection struct {
	Name   string         `json:"name"`
	Type   string         `json:"type"`
	Config jsontext.Value `json:"config,omitzero"`
	// SecretRefs maps the connection's secret keys to references.
	SecretRefs map[string]string `json:"secret_refs,omitempty"`
}

// Settings are daemon-wide settings.
type Settings struct {
	// Extensions are per-package settings, by package name.
	Extensions map[string]ExtensionSettings `json:"extensions,omitempty"`
	// Concurrency bounds the attempts running at once on executors of the
	// default pool (agent turns); nil is DefaultConcurrency. A pointer, so
	// an explicit 0 is refused rather than read as the default.
	Concurrency *int `json:"concurrency,omitempty"`
	// JobConcurrency bounds the attempts running at once on executors of
	// the jobs pool; nil is DefaultJobConcurrency.
	JobConcurrency *int `json:"job_concurrency,omitempty"`
}

// Default concurrency limits.
const (
	DefaultConcurrency    = 4
	DefaultJobConcurrency = 8
)

// ConcurrencyLimit is the bound on running attempts of the default pool.
func (s Settings) ConcurrencyLimit() int { return limitOr(s.Concurrency, DefaultConcurrency) }

// JobConcurrencyLimit is the bound on running attempts of the jobs pool.
func (s Settings) JobConcurrencyLimit() int { return limitOr(s.JobConcurrency, DefaultJobConcurrency) }

func limitOr(v *int, def int) int {
	if v == nil || *v < 1 {
		return def
	}
	return *v
}

// ExtensionSettings are the operator's grants to one package.
type ExtensionSettings struct {
	// PassEnv names daemon variables the package's process receives.
	PassEnv []string `json:"pass_env,omitempty"`
}

// Parse reads a config strictly: exact member names, no unknown members, no
// duplicates, the types the format says, and an object at the top (null is
// not an empty config: applied, it would remove every scope). A failure is
// Problems with one problem: its JSON path, its line and column, and a code
// (invalid_json, unknown_field, invalid_type, duplicate_field).
func Parse(data []byte) (*Config, error) {
	var c Config
	opts := json.JoinOptions(json.RejectUnknownMembers(true), json.MatchCaseInsensitiveNames(false))
	if err := json.Unmarshal(data, &c, opts); err != nil {
		return nil, decodeError(data, err)
	}
	if off := skipSeparators(data, 0); off < len(data) && data[off] != '{' {
		// Only null decodes into a struct without an error.
		line, col := position(data, off)
		return nil, Problems{{Path: "/", Code: CodeInvalidType, Severity: Error, Line: line, Column: col,
			Message: positioned(line, col, "this is a JSON null, where the config format wants an object: write {} for a config with no scopes")}}
	}
	return &c, nil
}

// Load reads and parses a config file.
func Load(path string) (*Config, []byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	c, err := Parse(data)
	if err != nil {
		return nil, data, fmt.Errorf("%s: %w", path, err)
	}
	return c, data, nil
}

// Hash is a config's content hash: 16 hex characters, the first 8 bytes of
// the SHA-256 of its canonical JSON (members sorted, no insignificant
// whitespace, RFC 8785). It hashes the config rather than its text, so
// re-indenting or reordering an equal config keeps the hash, and an apply
// of an unchanged config can say so.
func Hash(c *Config) string {
	b, err := json.Marshal(c, json.Deterministic(true))
	if err == nil {
		v := jsontext.Value(b)
		err = v.Canonicalize()
		b = v
	}
	if err != nil {
		// Only a config built in code with an invalid raw config value
		// gets here; Parse never returns one.
		b = fmt.Appendf(nil, "%#v", c)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// Scope returns the scope with id.
func (c *Config) Scope(id string) (*Scope, bool) {
	for i := range c.Scopes {
		if c.Scopes[i].ID == id {
			return &c.Scopes[i], true
		}
	}
	return nil, false
}

// Connection returns the connection named name.
func (c *Config) Connection(name string) (*Connection, bool) {
	for i := range c.Connections {
		if c.Connections[i].Name == name {
			return &c.Connections[i], true
		}
	}
	return nil, false
}

// PassEnv is the operator's grant of daemon variables to a package.
func (c *Config) PassEnv(pkg string) []string {
	return c.Settings.Extensions[pkg].PassEnv
}

// Marshal encodes the config for a file a person reads.
func (c *Config) Marshal() ([]byte, error) {
	b, err := json.Marshal(c, json.Deterministic(true), jsontext.WithIndent("  "))
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Dirs are the daemon's directories.
type Dirs struct {
	// Config holds config.json and installed packages (extensions/<name>).
	Config string
	// State holds the store, logs, extension state dirs and the socket.
	State string
}

// ConfigFile is the config file's path.
func (d Dirs) ConfigFile() string { return filepath.Join(d.Config, File) }

// Installed is the directory of installed packages.
func (d Dirs) Installed() string { return filepath.Join(d.Config, "extensions") }

// Store is the Pebble directory.
func (d Dirs) Store() string { return filepath.Join(d.State, "store") }

// Socket is the management API's Unix socket.
func (d Dirs) Socket() string { return filepath.Join(d.State, "open-conduit.sock") }

// ExtensionLog is a package's stderr log.
func (d Dirs) ExtensionLog(name string) string {
	return filepath.Join(d.State, "logs", "extensions", name+".log")
}

// ExtensionState is a package's private state directory.
func (d Dirs) ExtensionState(name string) string {
	return filepath.Join(d.State, "extensions", name)
}

// DefaultDirs are the XDG directories: $XDG_CONFIG_HOME/open-conduit and
// $XDG_STATE_HOME/open-conduit, falling back to ~/.config and
// ~/.local/state.
func DefaultDirs() Dirs {
	home, _ := os.UserHomeDir()
	cfg := os.Getenv("XDG_CONFIG_HOME")
	if cfg == "" {
		cfg = filepath.Join(home, ".config")
	}
	state := os.Getenv("XDG_STATE_HOME")
	if state == "" {
		state = filepath.Join(home, ".local", "state")
	}
	return Dirs{Config: filepath.Join(cfg, "open-conduit"), State: filepath.Join(state, "open-conduit")}
}

// ParseRef splits a secret reference into its kind (env, file) and target.
func ParseRef(ref string) (kind, target string, err error) {
	kind, target, ok := strings.Cut(ref, ":")
	if !ok || target == "" || !slices.Contains([]string{"env", "file"}, kind) {
		return "", "", fmt.Errorf("a secret reference is env:VAR or file:PATH")
	}
	return kind, target, nil
}

// Resolve reads a secret reference's value. relDir anchors a relative
// file: path (the config file's directory). The value never appears in an
// error.
func Resolve(ref, relDir string) (string, error) {
	kind, target, err := ParseRef(ref)
	if err != nil {
		return "", err
	}
	switch kind {
	case "env":
		v, ok := os.LookupEnv(target)
		if !ok {
			return "", fmt.Errorf("environment variable %s is not set", target)
		}
		return v, nil
	default:
		if !filepath.IsAbs(target) {
			target = filepath.Join(relDir, target)
		}
		b, err := os.ReadFile(target)
		if err != nil {
			return "", fmt.Errorf("reading secret file %s: %w", target, err)
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
}
