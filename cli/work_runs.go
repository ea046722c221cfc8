package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/open-conduit/open-conduit/client"
)

// The commands of running Work: its artifacts, the active Waits, and the
// controls and live output of its running execution.

func workArtifactsCommand() *command {
	var get, out string
	return &command{
		name:  "artifacts",
		usage: "ID",
		short: "list a Work's artifacts, or fetch one by name with --get",
		long: "List the artifacts a Work's executions committed: each one's ID, name, media type,\n" +
			"size, SHA-256, attempt's execution and when it was committed. --get NAME fetches\n" +
			"the latest one of that name instead, as 'work artifact ARTIFACT-ID' does: its\n" +
			"bytes to --out FILE (a new file, 0600), or to standard output; with --json the\n" +
			"listing (or, with --get, the artifact's record) is printed as JSON.",
		minArgs: 1, maxArgs: 1, state: true, json: true,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&get, "get", "", "fetch the latest artifact with this name")
			fs.StringVar(&out, "out", "", "with --get: write the bytes to this new file instead of standard output")
		},
		run: func(r *runner, args []string) error {
			if out != "" && get == "" {
				return usagef("--out goes with --get NAME; or use 'work artifact ARTIFACT-ID --out FILE'")
			}
			c := client.New(r.place.State)
			l, err := c.WorkArtifacts(r.ctx, args[0])
			if err != nil {
				return err
			}
			if get == "" {
				return r.emit(l, func(w io.Writer) error { return writeArtifacts(w, l) })
			}
			for i := len(l.Artifacts) - 1; i >= 0; i-- {
				if a := l.Artifacts[i]; a.Name == get {
					return fetchArtifact(r, c, a, out)
				}
			}
			return fmt.Errorf("Work %s has no artifact named %q; 'open-conduit work artifacts %s' lists them", args[0], get, args[0])
		},
	}
}

// writeArtifacts is a Work's artifacts as a table.
func writeArtifacts(w io.Writer, l client.Artifacts) error {
	if len(l.Artifacts) == 0 {
		return writeLines(w, fmt.Sprintf("Work %s has no artifacts", l.Work))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tTYPE\tSIZE\tSHA-256\tEXECUTION\tCOMMITTED")
	for _, a := range l.Artifacts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", a.ID, a.Name, dash(a.MediaType), a.Size, shortDigest(a.Digest), dash(a.Execution), timeText(a.Committed))
	}
	return tw.Flush()
}

// shortDigest is the first 12 hex digits of a digest, enough to tell
// artifacts apart in a table (--json has it whole).
func shortDigest(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return dash(d)
}

func workArtifactCommand() *command {
	var out string
	return &command{
		name:  "artifact",
		usage: "ARTIFACT-ID",
		short: "fetch one artifact's bytes, checked against its SHA-256",
		long: "Fetch a committed artifact's bytes to --out FILE (a new file, 0600; an existing\n" +
			"file is refused) or to standard output. The bytes are checked against the size\n" +
			"and SHA-256 the daemon recorded at commit; a mismatch fails and removes the\n" +
			"file. With --json the artifact's record is printed (and the bytes go only to\n" +
			"--out). 'work artifacts WORK' lists a Work's artifacts with their IDs.",
		minArgs: 1, maxArgs: 1, state: true, json: true,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&out, "out", "", "write the bytes to this new file instead of standard output")
		},
		run: func(r *runner, args []string) error {
			c := client.New(r.place.State)
			a, err := c.Artifact(r.ctx, args[0])
			if err != nil {
				return err
			}
			return fetchArtifact(r, c, a, out)
		},
	}
}

// fetchArtifact writes a's bytes to the new file out, or to standard
// output when out is "" and --json is not given; with --json it prints
// a's record.
func fetchArtifact(r *runner, c *client.Client, a client.Artifact, out string) error {
	if out == "" {
		if r.asJSON {
			return r.emit(a, nil)
		}
		_, _, err := c.ArtifactContent(r.ctx, a.ID, r.stdout)
		return err
	}
	f, err := os.OpenFile(out, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%s exists; give --out a new file", out)
	}
	if err != nil {
		return err
	}
	n, _, err := c.ArtifactContent(r.ctx, a.ID, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(out)
		return err
	}
	return r.emit(a, func(w io.Writer) error {
		return writeLines(w, fmt.Sprintf("%s: %d bytes to %s (sha256 %s)", a.ID, n, out, a.Digest))
	})
}

func workWaitsCommand() *command {
	var q client.WaitsQuery
	return &command{
		name:  "waits",
		short: "list the active Waits, one page after a cursor",
		long: "List the Waits Work waits on now, in the order of their Work's IDs: the Work,\n" +
			"who declared the Wait (its wait operation's package, or the builtin wait), its\n" +
			"description and progress line, and when it wakes without an Event. When more\n" +
			"Waits follow the page, the command that reads on is printed.",
		state: true, json: true,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&q.After, "after", "", "list the Waits after this Wait ID (a page's cursor)")
			fs.IntVar(&q.Limit, "limit", 100, fmt.Sprintf("at most this many Waits a page (1-%d)", client.MaxWaitsPage))
		},
		run: func(r *runner, _ []string) error {
			if q.Limit < 1 || q.Limit > client.MaxWaitsPage {
				return usagef("--limit must be between 1 and %d", client.MaxWaitsPage)
			}
			l, err := client.New(r.place.State).Waits(r.ctx, q)
			if err != nil {
				return err
			}
			return r.emit(l, func(w io.Writer) error {
				if len(l.Waits) == 0 {
					return writeLines(w, "no Work is waiting")
				}
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "WORK\tWAIT\tOWNER\tDESCRIPTION\tPROGRESS\tDUE")
				for _, x := range l.Waits {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", x.Work, x.ID, ownerText(x.Owner), dash(x.Description), dash(x.Progress), timeText(x.Due))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				if l.Next != "" {
					_, err = fmt.Fprintf(w, "more: %s\n", r.rerun(map[string]string{"after": l.Next}))
				}
				return err
			})
		},
	}
}

// ownerText names who declared a Wait.
func ownerText(owner string) string {
	if owner == "" {
		return "builtin wait"
	}
	return owner
}

// workControlCommand is one control of a Work's running execution.
func workControlCommand(control, short, long string) *command {
	cmd := &command{
		name: control, usage: "ID", short: short, long: long,
		minArgs: 1, maxArgs: 1, state: true, json: true,
		run: func(r *runner, args []string) error {
			text := ""
			if control == client.ControlInject {
				text = args[1]
			}
			res, err := client.New(r.place.State).ControlWork(r.ctx, args[0], control, text)
			if err != nil {
				return err
			}
			return r.emit(res, func(w io.Writer) error {
				return writeLines(w, fmt.Sprintf("%s: %s sent to its running execution", res.Work, res.Control))
			})
		},
	}
	if control == client.ControlInject {
		cmd.usage, cmd.minArgs, cmd.maxArgs = "ID TEXT", 2, 2
	}
	return cmd
}

func workInterruptCommand() *command {
	return workControlCommand(client.ControlInterrupt, "interrupt a Work's running execution (it stops what it does, and stays)",
		"Interrupt the running execution of a Work: its executor stops the current step\n"+
			"(a turn, a command) and the execution stays, ready for more input. An executor\n"+
			"that does not declare interrupt refuses it unsupported.")
}

func workInjectCommand() *command {
	return workControlCommand(client.ControlInject, "give a Work's running execution more text to act on",
		"Inject TEXT into the running execution of a Work, as more input to its current\n"+
			fmt.Sprintf("session (at most %d bytes). An executor that does not declare inject refuses\n", client.MaxInjectText)+
			"it unsupported; one that takes no input now refuses it not_accepting.")
}

func workStopCommand() *command {
	return workControlCommand(client.ControlStop, "stop a Work's running execution",
		"Stop the running execution of a Work: its executor ends it and the attempt settles.\n"+
			"The Work itself stays open; 'work cancel ID' ends it. An executor that does not\n"+
			"declare stop refuses it unsupported.")
}

func workLiveCommand() *command {
	var tail int
	return &command{
		name:  "live",
		usage: "ID",
		short: "show a Work's running execution's output so far",
		long: "Show what the running execution of a Work has written so far: each output's name,\n" +
			"size and its last bytes (--tail). An execution with no live output, or an\n" +
			"executor that does not declare live, is refused with why.",
		minArgs: 1, maxArgs: 1, state: true, json: true,
		flags: func(fs *pflag.FlagSet) {
			fs.IntVar(&tail, "tail", 4096, fmt.Sprintf("the last this many bytes of each output (1-%d)", client.MaxLiveTail))
		},
		run: func(r *runner, args []string) error {
			if tail < 1 || tail > client.MaxLiveTail {
				return usagef("--tail must be between 1 and %d", client.MaxLiveTail)
			}
			l, err := client.New(r.place.State).WorkLive(r.ctx, args[0], tail)
			if err != nil {
				return err
			}
			return r.emit(l, func(w io.Writer) error {
				if len(l.Outputs) == 0 {
					return writeLines(w, fmt.Sprintf("%s: no output yet", l.Work))
				}
				for _, o := range l.Outputs {
					if _, err := fmt.Fprintf(w, "== %s (%d bytes) ==\n%s\n", o.Name, o.Size, o.Tail); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
}

// writeAttempts is a Work's attempts as a table.
func writeAttempts(w io.Writer, xs []client.Execution) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ATTEMPT\tEXECUTION\tEXECUTOR\tEPOCH\tSTATE\tOUTCOME\tEXIT\tSTARTED\tSETTLED")
	for _, x := range xs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", x.Attempt, x.ID, x.Package+"/"+x.Executor, x.Epoch, x.State,
			outcomeText(x), exitText(x.ExitCode), timeText(x.Started), timeText(x.Settled))
	}
	return tw.Flush()
}

// outcomeText is an attempt's outcome with its reason, or what it
// declared while it runs.
func outcomeText(x client.Execution) string {
	s, why := x.Outcome, x.Reason
	if s == "" && x.Declared != "" {
		s, why = "declared "+x.Declared, x.DeclaredReason
	}
	if why != "" {
		s += " (" + firstLine(why) + ")"
	}
	return dash(s)
}

// exitText is an exit code, "-" for none.
func exitText(code *int) string {
	if code == nil {
		return "-"
	}
	return strconv.Itoa(*code)
}

// waitText is a Wait in one line: who declared it, what it waits for, its
// progress and when it wakes without an Event.
func waitText(x *client.Wait, now time.Time) string {
	s := fmt.Sprintf("%s by %s: %s", x.ID, ownerText(x.Owner), dash(x.Description))
	if x.Progress != "" {
		s += "; " + x.Progress
	}
	if !x.Due.IsZero() {
		s += fmt.Sprintf("; wakes %s (in %s)", timeText(x.Due), until(now, x.Due))
	}
	return s
}

// until is how long from now t is, in its largest unit.
func until(now, t time.Time) string { return age(t, now) }
