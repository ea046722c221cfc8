package devloop

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/protocol"
)

// Scope is the id of the scope dev generates.
const Scope = "dev"

// ParseEntries reads --entry values, TYPE=JSON each, into a map from type
// to config; a type given twice or a value that is not JSON is refused.
func ParseEntries(values []string) (map[string]jsontext.Value, error) {
	out := map[string]jsontext.Value{}
	for _, v := range values {
		typ, text, ok := strings.Cut(v, "=")
		if !ok || typ == "" {
			return nil, fmt.Errorf("an --entry is not TYPE=JSON: give the entry type before '=' (e.g. --entry 'weather={\"city\":\"Oslo\"}')")
		}
		if _, dup := out[typ]; dup {
			return nil, fmt.Errorf("--entry names type %q twice: give each type once", typ)
		}
		val := jsontext.Value(text)
		if !val.IsValid() {
			return nil, fmt.Errorf("--entry %s: the config is not valid JSON", typ)
		}
		out[typ] = val
	}
	return out, nil
}

// ParseSecrets reads --secret values, NAME=env:VAR or NAME=VALUE each, into
// a map from name to the value as given.
func ParseSecrets(values []string) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range values {
		name, val, ok := strings.Cut(v, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("a --secret is not NAME=env:VAR or NAME=VALUE: give the secret's name before '='")
		}
		if strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
			return nil, fmt.Errorf("--secret name %q: use letters, digits, '_' and '-' only", name)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("--secret names %q twice: give each secret once", name)
		}
		out[name] = val
	}
	return out, nil
}

// generate is the config dev runs: one scope, Scope, with an entry of each
// extension type m declares (named after the type, its config from entries
// or {}), each selecting every secret. A secret given as env:VAR stays a
// reference to dev's environment; one given as a value is written to a
// file only its owner reads, under secretDir, and referenced as file:PATH,
// so no value is ever written in the config.
func generate(m *protocol.Manifest, entries map[string]jsontext.Value, secrets map[string]string, secretDir string) ([]byte, error) {
	declared := map[string]bool{}
	for _, t := range m.Provides.Extensions {
		declared[t.Type] = true
	}
	for typ := range entries {
		if !declared[typ] {
			return nil, fmt.Errorf("--entry names type %q, which %s does not declare (it declares: %s)",
				typ, m.Name, strings.Join(typesOf(m), ", "))
		}
	}
	scope := config.Scope{ID: Scope}
	names := make([]string, 0, len(secrets))
	for name, val := range secrets {
		ref, err := secretRef(name, val, secretDir)
		if err != nil {
			return nil, err
		}
		if scope.SecretRefs == nil {
			scope.SecretRefs = map[string]string{}
		}
		scope.SecretRefs[name] = ref
		names = append(names, name)
	}
	slices.Sort(names)
	for _, t := range m.Provides.Extensions {
		cfg, ok := entries[t.Type]
		if !ok {
			cfg = jsontext.Value("{}")
		}
		scope.Entries = append(scope.Entries, config.Entry{Name: t.Type, Type: t.Type, Config: cfg, Secrets: names})
	}
	c := config.Config{Scopes: []config.Scope{scope}}
	b, err := json.Marshal(c, json.Deterministic(true))
	if err != nil {
		return nil, err
	}
	v := jsontext.Value(b)
	if err := v.Indent(jsontext.WithIndent("  ")); err != nil {
		return nil, err
	}
	return append(v, '\n'), nil
}

func typesOf(m *protocol.Manifest) []string {
	var out []string
	for _, t := range m.Provides.Extensions {
		out = append(out, t.Type)
	}
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}

// secretRef is the reference a --secret becomes.
func secretRef(name, val, dir string) (string, error) {
	if strings.HasPrefix(val, "env:") {
		if strings.TrimPrefix(val, "env:") == "" {
			return "", fmt.Errorf("--secret %s=env: names no variable: write %s=env:VAR", name, name)
		}
		return val, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(val), 0o600); err != nil {
		return "", fmt.Errorf("writing secret %s for the generated config: %w", name, err)
	}
	return "file:" + path, nil
}
