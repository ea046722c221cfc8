package cli

import (
	"fmt"
	"io"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/spf13/pflag"

	"github.com/open-conduit/open-conduit/client"
)

func extensionTapCommand() *command {
	var (
		follow bool
		after  uint64
	)
	return &command{
		name:  "tap",
		usage: "NAME",
		short: "show a package's recent JSON-RPC traffic (the wire tap)",
		long: "Show the JSON-RPC lines between the running daemon and a package's process,\n" +
			"as the daemon's wire tap keeps them: the last 256 or so, one line each with its\n" +
			"number, time, direction (→ host to extension, ← extension to host), kind,\n" +
			"method, id, size and, for an answer, the time since its request. With\n" +
			"--follow, keep printing lines as they pass, until interrupted. With --json,\n" +
			"print each entry as one JSON object per line, the message's text included (at\n" +
			"most 4 KiB of it; the result of a secret.resolve answer is never kept).",
		minArgs: 1, maxArgs: 1,
		state: true, json: true,
		flags: func(fs *pflag.FlagSet) {
			boolFlag(fs, &follow, "follow", "f", "keep printing new lines as they pass, until interrupted")
			fs.Uint64Var(&after, "after", 0, "print only the lines numbered after this")
		},
		run: func(r *runner, args []string) error {
			c := client.New(r.place.State)
			for {
				var wait time.Duration
				if follow {
					wait = pollWait
				}
				p, err := c.Wire(r.ctx, args[0], client.WireQuery{After: after, Wait: wait})
				if follow && r.ctx.Err() != nil {
					return nil
				}
				if err != nil {
					return err
				}
				if err := writeWire(r.stdout, r.asJSON, after, p); err != nil {
					return err
				}
				after = p.Next
				if !p.More && !follow {
					return nil
				}
			}
		},
	}
}

// writeWire prints one page of the tap: a line per entry, or with asJSON
// one JSON object per entry; a note first when lines after the cursor were
// dropped from the bounded ring before they were read.
func writeWire(w io.Writer, asJSON bool, after uint64, p client.WirePage) error {
	if len(p.Entries) > 0 && p.Entries[0].Seq > after+1 && !asJSON {
		if _, err := fmt.Fprintf(w, "--- lines %d to %d were dropped from the bounded tap before they were read ---\n", after+1, p.Entries[0].Seq-1); err != nil {
			return err
		}
	}
	for _, e := range p.Entries {
		var err error
		if asJSON {
			var b []byte
			if b, err = json.Marshal(e, json.Deterministic(true)); err == nil {
				_, err = w.Write(append(b, '\n'))
			}
		} else {
			_, err = fmt.Fprintln(w, wireLine(e))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// wireLine is one entry as a line: number, time, arrow, kind, method, id,
// size and latency.
func wireLine(e client.WireEntry) string {
	arrow := "←"
	if e.Direction == client.WireToExtension {
		arrow = "→"
	}
	s := fmt.Sprintf("#%d %s %s %s %s", e.Seq, e.Time.Local().Format("15:04:05.000"), arrow, e.Kind, dash(e.Method))
	if e.ID != "" {
		s += " id=" + e.ID
	}
	s += fmt.Sprintf(" %dB", e.Size)
	if e.LatencyMicros > 0 {
		s += " " + (time.Duration(e.LatencyMicros) * time.Microsecond).String()
	}
	if e.Redacted {
		s += " (result redacted)"
	}
	return s
}
