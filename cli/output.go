package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/spf13/pflag"
)

// emit prints v: as indented JSON with --json, else through table. Every
// command prints through it, so a script and a person read the same value.
func (r *runner) emit(v any, table func(w io.Writer) error) error {
	if r.asJSON {
		return printJSON(r.stdout, v)
	}
	return table(r.stdout)
}

func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v, json.Deterministic(true), jsontext.WithIndent("  "))
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// firstLine is a message cut to one short line for a table cell.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return s
}

// oneLine joins a multi-line message into one line, for the error line a
// failed command prints.
func oneLine(s string) string {
	return strings.Join(strings.Split(strings.TrimSpace(s), "\n"), "; ")
}

// dash stands in for an empty table cell.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// timeLayout prints a time in one zone with its offset, so a reader can
// compare times from machines in different zones.
const timeLayout = "2006-01-02 15:04:05 -07:00"

// timeText is t in the local zone, with its offset; "-" for no time.
func timeText(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(timeLayout)
}

// rerun is the command line that repeats this one with every flag it was
// given, in name order, some replaced (a flag replaced with "" is
// dropped), so a hint keeps what the operator chose. --state and --config
// are given as the absolute paths they resolved to.
func (r *runner) rerun(replace map[string]string) string {
	values := map[string]string{}
	r.flags.Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "state":
			values[f.Name] = r.place.State
		case "config":
			values[f.Name] = r.place.ConfigFile
		default:
			values[f.Name] = f.Value.String()
		}
	})
	maps.Copy(values, replace)
	parts := []string{r.path}
	for _, name := range slices.Sorted(maps.Keys(values)) {
		f, v := r.flags.Lookup(name), values[name]
		switch {
		case f == nil || v == "":
		case f.NoOptDefVal == v:
			parts = append(parts, "--"+name)
		case f.NoOptDefVal != "":
			parts = append(parts, "--"+name+"="+v)
		default:
			parts = append(parts, "--"+name, shellQuote(v))
		}
	}
	return strings.Join(parts, " ")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeLines prints lines, one each.
func writeLines(w io.Writer, lines ...string) error {
	for _, l := range lines {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}
