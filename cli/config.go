package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/host/discover"
	"github.com/open-conduit/open-conduit/host/validate"
	"github.com/open-conduit/open-conduit/protocol"
)

// applyTimeout bounds config apply: every package validates and is
// configured again.
const applyTimeout = 2 * time.Minute

func configCommand() *command {
	return &command{
		name:  "config",
		short: "the configuration: write, check, apply and show it",
		subs:  []*command{configInitCommand(), configCheckCommand(), configApplyCommand(), configShowCommand()},
	}
}

func configCheckCommand() *command {
	return &command{
		name:  "check",
		short: "validate a config file offline",
		long: "Validate the config file offline against the packages discovery finds (installed\n" +
			"beside it, bundled, served by this binary): the format's rules first, then each\n" +
			"package the config uses is started, for validate alone, to check the entries and\n" +
			"connections of its types. Every problem is printed with the JSON path it is at.\n" +
			"Exits 1 on any error; warnings do not fail.",
		config: true, json: true,
		run: func(r *runner, _ []string) error {
			file := r.place.ConfigFile
			data, err := os.ReadFile(file)
			if err != nil {
				return fmt.Errorf("reading the config: %w (pass --config FILE)", err)
			}
			res := checkOffline(r.ctx, data, file, discoverAt(r.place))
			err = r.emit(res, func(w io.Writer) error {
				writeProblems(w, res.Problems)
				if res.OK {
					fmt.Fprintf(w, "%s is valid (%d warning(s))\n", file, len(res.Problems))
				}
				return nil
			})
			if err == nil && !res.OK {
				err = fmt.Errorf("%s has %d error(s)", file, countErrors(res.Problems))
			}
			return err
		},
	}
}

// discoverAt finds the packages a place sees: installed beside its config
// file, bundled beside this binary, and served by it.
func discoverAt(p place) []discover.Package {
	pkgs, _ := discover.Discover(discover.Options{Installed: p.installed(), Bundled: bundledDir(), Served: served()})
	return pkgs
}

func manifestsOf(pkgs []discover.Package) []*protocol.Manifest {
	ms := make([]*protocol.Manifest, len(pkgs))
	for i, p := range pkgs {
		ms[i] = p.Manifest
	}
	return ms
}

// checkOffline runs the validation pipeline serve and config apply run,
// offline: parse, the format's rules against pkgs, then each package the
// config uses, started for validate alone.
func checkOffline(ctx context.Context, data []byte, file string, pkgs []discover.Package) client.Validation {
	_, ps := validate.Run(ctx, validate.Input{
		Text: data, Source: file, Running: manifestsOf(pkgs),
		Ask: validate.Offline(pkgs, validate.OfflineOptions{}),
	})
	res := client.Validation{OK: len(ps.Errors()) == 0}
	for _, p := range ps {
		res.Problems = append(res.Problems, client.Problem{Path: p.Path, Code: p.Code, Severity: p.Severity, Message: p.Message, Line: p.Line, Column: p.Column})
	}
	return res
}

func countErrors(ps []client.Problem) int {
	n := 0
	for _, p := range ps {
		if p.Severity == config.Error {
			n++
		}
	}
	return n
}

// writeProblems prints a problem a line, with its JSON path and code.
func writeProblems(w io.Writer, ps []client.Problem) {
	for _, p := range ps {
		fmt.Fprintf(w, "%s %s: %s (%s)\n", p.Severity, p.Path, p.Message, p.Code)
	}
}

func configApplyCommand() *command {
	return &command{
		name:  "apply",
		short: "apply a config to the running daemon, without a restart",
		long: "Apply a config to the running daemon: it is validated against the running\n" +
			"packages, and every package is configured again, without a restart; the daemon\n" +
			"writes it to the file serve reads at its next start. With --config, FILE's text\n" +
			"is sent; without, the daemon reads its own config file again (as SIGHUP to\n" +
			"serve does). A config with errors changes nothing. Exits 1 when it is not\n" +
			"applied; a config equal to the live one is no change, not a failure.",
		state: true, config: true, json: true,
		run: func(r *runner, _ []string) error {
			ctx, cancel := context.WithTimeout(r.ctx, applyTimeout)
			defer cancel()
			res, err := applyConfig(ctx, r.place)
			if err != nil {
				return err
			}
			err = r.emit(res, func(w io.Writer) error { return writeApplied(w, res) })
			if err == nil && !res.Applied && !res.Unchanged {
				err = errors.New("not applied: fix the errors above")
			}
			return err
		},
	}
}

// applyConfig sends the named config file, or has the daemon reload its
// own: the default location is the daemon's business, and it may have
// been started on another file.
func applyConfig(ctx context.Context, p place) (client.Applied, error) {
	c := client.New(p.State)
	if !p.Named {
		return c.ReloadConfig(ctx)
	}
	data, err := os.ReadFile(p.ConfigFile)
	if err != nil {
		return client.Applied{}, fmt.Errorf("reading the config: %w", err)
	}
	return c.ApplyConfig(ctx, data)
}

// writeApplied says what an apply did: its problems and refusals, then the
// generation.
func writeApplied(w io.Writer, res client.Applied) error {
	writeProblems(w, res.Problems)
	for _, rf := range res.Refused {
		fmt.Fprintf(w, "refused by %s: %s (%s)\n", rf.Extension, firstLine(rf.Message), rf.Code)
	}
	switch {
	case res.Unchanged:
		fmt.Fprintf(w, "no changes (generation %d)\n", res.Generation)
	case res.Applied && res.File != "":
		fmt.Fprintf(w, "applied generation %d (hash %s), written to %s\n", res.Generation, res.Hash, res.File)
	case res.Applied:
		fmt.Fprintf(w, "applied generation %d (hash %s)\n", res.Generation, res.Hash)
	}
	return nil
}

func configShowCommand() *command {
	return &command{
		name:  "show",
		short: "print the running daemon's live config",
		long: "Print the live config generation's text, as the operator wrote it (secrets\n" +
			"appear as their references, never their values). Its generation, hash, source\n" +
			"and the file serve reads are printed on stderr, so stdout is the config alone.",
		state: true, json: true,
		run: func(r *runner, _ []string) error {
			v, err := client.New(r.place.State).Config(r.ctx)
			if err != nil {
				return err
			}
			return r.emit(v, func(w io.Writer) error { return writeConfigView(w, r.stderr, v) })
		},
	}
}

// writeConfigView prints the config's text on w and where it came from on
// about.
func writeConfigView(w, about io.Writer, v client.ConfigView) error {
	fmt.Fprintf(about, "generation %d (hash %s) from %s; serve reads %s\n", v.Generation, dash(v.Hash), dash(v.Source), dash(v.File))
	text := []byte(v.Text)
	if len(text) > 0 && text[len(text)-1] != '\n' {
		text = append(text, '\n')
	}
	_, err := w.Write(text)
	return err
}
