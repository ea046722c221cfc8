package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/open-conduit/open-conduit/client"
)

func doctorCommand() *command {
	var deep bool
	return &command{
		name:  "doctor",
		short: "check the running daemon and its packages",
		long: "Run the daemon's checks and every package's declared doctor checks, and print\n" +
			"each with its status and code; under a failing or warning check whose code has\n" +
			"a remedy, the remedy says what to change. Exits 1 when any check fails.\n" +
			"--deep also reads the whole store (every block's checksum, Pebble's\n" +
			"consistency check of its levels), naming any damaged file.",
		state: true, json: true,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&deep, "deep", false, "also read the whole store and check every file (up to 45 s)")
		},
		run: func(r *runner, _ []string) error {
			doc, err := client.New(r.place.State).Doctor(r.ctx, client.DoctorOptions{Deep: deep})
			if err != nil {
				return err
			}
			if err := r.emit(doc, func(w io.Writer) error { return writeDoctor(w, doc) }); err != nil {
				return err
			}
			if !doc.OK {
				return errors.New("a check failed")
			}
			return nil
		},
	}
}

// writeDoctor prints a check a line, its remedy on the next.
func writeDoctor(w io.Writer, doc client.Doctor) error {
	for _, c := range doc.Checks {
		code := ""
		if c.Code != "" {
			code = " [" + c.Code + "]"
		}
		if _, err := fmt.Fprintf(w, "%-4s %s: %s%s\n", c.Status, c.Name, c.Detail, code); err != nil {
			return err
		}
		if c.Remedy != "" {
			if _, err := fmt.Fprintf(w, "     remedy: %s\n", c.Remedy); err != nil {
				return err
			}
		}
	}
	return nil
}
