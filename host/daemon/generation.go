package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// genNamespace keeps the daemon's own records in the store's KV. "core" is
// a reserved name no package can take, so no extension can address it.
const genNamespace = "core.config"

// embeddedDefault is how the operator's views name a generation that came
// from no file.
const embeddedDefault = "embedded default"

func sourceName(source string) string {
	if source == "" {
		return embeddedDefault
	}
	return source
}

// startup is the configuration serve starts on, read before any package
// starts: the file's text, or nothing for the embedded default (which is
// built from the packages that start).
type startup struct {
	text   []byte
	source string
	cfg    *config.Config
}

// passEnv is the operator's grant of daemon variables to a package, from
// the configuration the daemon starts on (none for the embedded default).
func (s startup) passEnv(name string) []string {
	if s.cfg == nil {
		return nil
	}
	return s.cfg.PassEnv(name)
}

// readConfig reads and parses the config file. A named file that is missing
// is an error; the default location may be missing, and then the daemon
// runs the embedded default. A file that does not parse refuses the start
// with every problem, each at its line and column.
func (d *Daemon) readConfig() (startup, error) {
	path := d.opts.ConfigFile
	text, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && d.opts.ConfigNamed:
		return startup{}, fmt.Errorf("the config file %s does not exist: correct --config, write a starter one with 'open-conduit config init --config %s', or leave --config out to run the embedded default", path, path)
	case errors.Is(err, fs.ErrNotExist):
		return startup{}, nil
	case err != nil:
		return startup{}, fmt.Errorf("reading the config file: %w", err)
	}
	cfg, err := config.Parse(text)
	if err != nil {
		return startup{}, refusedConfig(path, asProblems(err))
	}
	return startup{text: text, source: path, cfg: cfg}, nil
}

// refusedConfig is the error that refuses a configuration at start.
func refusedConfig(source string, ps config.Problems) error {
	errs := ps.Errors()
	return fmt.Errorf("the configuration (%s) has %d problem(s); fix them and start again ('open-conduit config check' lists them too):\n%w",
		sourceName(source), len(errs), errs)
}

func asProblems(err error) config.Problems {
	var ps config.Problems
	if errors.As(err, &ps) {
		return ps
	}
	return config.Problems{{Path: "/", Code: "invalid_json", Severity: config.Error, Message: err.Error()}}
}

// checkStartup validates the startup configuration with the packages that
// started, and returns it as the generation to adopt. The embedded default
// is built from the packages that started, so it uses only what runs.
func (d *Daemon) checkStartup(ctx context.Context, s startup) (*config.Generation, error) {
	text := s.text
	if text == nil {
		def := config.Default(d.pkgs.runningManifests())
		var err error
		if text, err = def.Marshal(); err != nil {
			return nil, err
		}
	}
	g, ps := d.validate(ctx, text, s.source)
	if len(ps.Errors()) > 0 {
		return nil, refusedConfig(s.source, ps)
	}
	return g, nil
}

// adopt numbers g and makes it the live generation. The number is kept
// when the text hashes the same as the generation the store recorded last,
// so a restart on an unchanged config keeps its generation; a change is
// the next number. The store keeps the live text.
func (d *Daemon) adopt(candidate *config.Generation) (*config.Generation, error) {
	var g *config.Generation
	err := d.db.Update(func(tx *pebblekv.Tx) error {
		id, hash, err := storedGeneration(tx)
		if err != nil {
			return err
		}
		if hash == candidate.Hash {
			g = candidate.WithID(id)
			return nil
		}
		g = candidate.WithID(id + 1)
		if err := tx.KVPut(genNamespace, "generation", []byte(strconv.FormatInt(g.ID, 10))); err != nil {
			return err
		}
		if err := tx.KVPut(genNamespace, "hash", []byte(g.Hash)); err != nil {
			return err
		}
		return tx.KVPut(genNamespace, "text", g.Text)
	})
	if err != nil {
		return nil, fmt.Errorf("recording the config generation: %w", err)
	}
	d.gen.Store(g)
	for _, p := range g.Problems {
		d.logger.Warn("config warning", "path", p.Path, "code", p.Code, "message", p.Message)
	}
	return g, nil
}

// storedGeneration reads the last generation the store recorded (0 and ""
// when none).
func storedGeneration(tx *pebblekv.Tx) (int64, string, error) {
	v, _, found, err := tx.KVGet(genNamespace, "generation")
	if err != nil || !found {
		return 0, "", err
	}
	id, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0, "", fmt.Errorf("the store's generation record %q is not a number: %w", v, err)
	}
	h, _, _, err := tx.KVGet(genNamespace, "hash")
	return id, string(h), err
}

// Validate checks a config text against the running packages without
// applying it.
func (d *Daemon) Validate(ctx context.Context, text []byte) (client.Validation, error) {
	if d.Phase() == client.PhaseStarting {
		return client.Validation{}, errStarting()
	}
	_, ps := d.validate(ctx, text, d.opts.ConfigFile)
	return client.Validation{OK: len(ps.Errors()) == 0, Problems: clientProblems(ps)}, nil
}

func errStarting() error {
	return protocol.Errorf(protocol.ErrUnavailable, "the daemon is still starting its packages; try again when 'open-conduit status' says running")
}

// Apply validates a config text and makes it the live generation: it is
// written atomically to the config file serve reads at its next start,
// recorded, and sent to every running package in configure, without a
// restart. The installed packages are rescanned first, so a package
// installed since the daemon started can be used. A config with errors
// changes nothing; the config the daemon already runs answers unchanged and
// keeps its generation.
func (d *Daemon) Apply(ctx context.Context, text []byte) (client.Applied, error) {
	if d.Phase() != client.PhaseRunning {
		return client.Applied{}, errStarting()
	}
	d.changeMu.Lock()
	defer d.changeMu.Unlock()
	if _, err := d.rescanLocked(); err != nil {
		d.logger.Warn("rescan before apply", "err", err)
	}
	g, ps := d.validate(ctx, text, d.opts.ConfigFile)
	if len(ps.Errors()) > 0 {
		return client.Applied{Problems: clientProblems(ps)}, nil
	}
	cur := d.gen.Load()
	res := client.Applied{File: d.opts.ConfigFile, Problems: clientProblems(ps)}
	if g.Hash == cur.Hash && cur.Source == d.opts.ConfigFile {
		res.Unchanged, res.Generation, res.Hash = true, cur.ID, cur.Hash
		return res, nil
	}
	if err := config.WriteFile(d.opts.ConfigFile, text, true); err != nil {
		return client.Applied{}, fmt.Errorf("writing the config file (nothing was applied): %w", err)
	}
	g, err := d.adopt(g)
	if err != nil {
		return client.Applied{}, err
	}
	res.Applied, res.Generation, res.Hash = true, g.ID, g.Hash
	res.Refused = d.configureAll(ctx)
	d.logger.Info("config applied", "generation", g.ID, "hash", g.Hash, "file", d.opts.ConfigFile)
	return res, nil
}

// Reload reads the config file again and applies it, as config apply would
// (SIGHUP does the same).
func (d *Daemon) Reload(ctx context.Context) (client.Applied, error) {
	text, err := os.ReadFile(d.opts.ConfigFile)
	if errors.Is(err, fs.ErrNotExist) {
		return client.Applied{}, protocol.Errorf(protocol.ErrNotFound,
			"there is no config file at %s to reload; the daemon runs the %s (write one with 'open-conduit config init', or apply one with 'open-conduit config apply --config FILE')",
			d.opts.ConfigFile, sourceName(d.gen.Load().Source))
	}
	if err != nil {
		return client.Applied{}, fmt.Errorf("reading the config file: %w", err)
	}
	return d.Apply(ctx, text)
}

// Config is the live generation as the operator wrote it.
func (d *Daemon) Config() (client.ConfigView, error) {
	g := d.gen.Load()
	if g == nil {
		return client.ConfigView{}, errStarting()
	}
	return client.ConfigView{Generation: g.ID, Hash: g.Hash, Source: sourceName(g.Source), File: d.opts.ConfigFile, Text: string(g.Text)}, nil
}

func clientProblems(ps config.Problems) []client.Problem {
	out := make([]client.Problem, len(ps))
	for i, p := range ps {
		out[i] = client.Problem{Path: p.Path, Code: p.Code, Severity: p.Severity, Message: p.Message, Line: p.Line, Column: p.Column}
	}
	return out
}
