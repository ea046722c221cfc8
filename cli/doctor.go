package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/protocol"
)

// doctorReport is doctor's answer with the remedy of each failing or
// warning check whose code has one, so --json and the table say the same.
type doctorReport struct {
	OK     bool          `json:"ok"`
	Checks []doctorCheck `json:"checks"`
}

// doctorCheck is one check and what to change when it is not ok.
type doctorCheck struct {
	client.Check
	Remedy string `json:"remedy,omitempty"`
}

func doctorCommand() *command {
	return &command{
		name:  "doctor",
		short: "check the running daemon and its packages",
		long: "Run the daemon's checks and every package's declared doctor checks, and print\n" +
			"each with its status and code; under a failing or warning check whose code has\n" +
			"a remedy, the remedy says what to change. Exits 1 when any check fails.",
		state: true, json: true,
		run: func(r *runner, _ []string) error {
			c := client.New(r.place.State)
			doc, err := c.Doctor(r.ctx)
			if err != nil {
				return err
			}
			// The daemon fills the remedy of each package's state; a
			// failure to list them only costs the remedies.
			exts, _ := c.Extensions(r.ctx)
			rep := newDoctorReport(doc, exts.Extensions)
			if err := r.emit(rep, func(w io.Writer) error { return writeDoctor(w, rep) }); err != nil {
				return err
			}
			if !rep.OK {
				return errors.New("a check failed")
			}
			return nil
		},
	}
}

// newDoctorReport pairs every failing or warning check with its remedy.
func newDoctorReport(doc client.Doctor, exts []client.Extension) doctorReport {
	rep := doctorReport{OK: doc.OK, Checks: make([]doctorCheck, len(doc.Checks))}
	for i, c := range doc.Checks {
		rep.Checks[i] = doctorCheck{Check: c}
		if c.Status == protocol.CheckFail || c.Status == protocol.CheckWarn {
			rep.Checks[i].Remedy = remedyFor(c, exts)
		}
	}
	return rep
}

// remedyFor is the remedy the daemon gave the package state a check
// reports: the package the check is named after, with the check's code;
// else the one remedy every package with that code shares. A remedy may
// name the package's own files, so one package's is never shown for
// another's check when they differ.
func remedyFor(c client.Check, exts []client.Extension) string {
	if c.Code == "" {
		return ""
	}
	shared, n := "", 0
	for _, e := range exts {
		if e.Code != c.Code || e.Remedy == "" {
			continue
		}
		if c.Name == e.Name || c.Name == "extension "+e.Name {
			return e.Remedy
		}
		if e.Remedy != shared {
			shared, n = e.Remedy, n+1
		}
	}
	if n == 1 {
		return shared
	}
	return ""
}

// writeDoctor prints a check a line, its remedy on the next.
func writeDoctor(w io.Writer, rep doctorReport) error {
	for _, c := range rep.Checks {
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
