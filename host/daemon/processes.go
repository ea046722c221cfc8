package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/session"
)

// StopGrace bounds how long Shutdown waits for the packages to stop on
// their own (shutdown, stdin closed, SIGTERM) before it kills them.
const StopGrace = 10 * time.Second

// processRecordFile is where, in the state directory, the daemon records
// the runs whose packages' processes may still live, and the detached work
// that may outlive it.
const processRecordFile = "processes.json"

// processRecord is what the state directory remembers of the processes the
// daemon's packages started.
//
// Every package process carries its run's marker (session.MarkerEnv), and
// its descendants inherit it. A run stays recorded until its daemon stopped
// and reaped it; a daemon killed outright (kill -9, a power cut) leaves its
// run recorded, and the next start on the state directory kills every
// process that carries a recorded run's marker, and whatever shares a
// session with one, before it starts any package. A marker is never
// reused, so a reused process id is never mistaken for a package's.
//
// Only an executor's deliberately detached work may outlive the daemon: it
// is recorded by process id and start time, spared by every reap (with
// what it started), and kept in the record until it ends, so a later
// daemon can adopt it or stop it.
type processRecord struct {
	Runs     []recordedRun `json:"runs"`
	Detached []detached    `json:"detached"`
}

// recordedRun is one daemon run whose processes may still live.
type recordedRun struct {
	Token   string    `json:"token"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
}

// detached is an executor's work that may outlive the daemon.
type detached struct {
	Extension string `json:"extension"`
	PID       int    `json:"pid"`
	// StartTicks is the process's start time (clock ticks after boot, as
	// /proc gives it), so a reused process id is never taken for it.
	StartTicks uint64    `json:"start_ticks"`
	Since      time.Time `json:"since"`
}

// processes is the daemon's record and its run's token.
type processes struct {
	path string
	run  string

	mu  sync.Mutex
	rec processRecord
}

// reapOrphans kills what the packages of earlier runs left running, then
// records this run; it runs once the state directory is this daemon's
// (locked) and before any package starts.
func (d *Daemon) reapOrphans() error {
	p := &processes{path: filepath.Join(d.opts.StateDir, processRecordFile), run: session.NewRun()}
	rec, err := readProcessRecord(p.path)
	if err != nil {
		return err
	}
	p.rec.Detached = liveDetached(rec.Detached)
	for _, r := range rec.Runs {
		killed, err := session.Reap(r.Token, p.isDetached)
		if err != nil {
			d.logger.Warn("could not look for what an earlier run left running", "err", err)
			p.rec.Runs = append(p.rec.Runs, r)
			continue
		}
		if len(killed) > 0 {
			d.logger.Warn("killed processes an earlier daemon's packages left running", "count", len(killed),
				"pids", killed, "daemon_pid", r.PID, "daemon_started", r.Started)
		}
	}
	p.rec.Runs = append(p.rec.Runs, recordedRun{Token: p.run, PID: os.Getpid(), Started: d.started})
	if err := p.write(); err != nil {
		return err
	}
	d.procs = p
	return nil
}

// release reaps what is left of this run's processes once every package
// stopped, and forgets the run; a run it could not reap stays recorded for
// the next start.
func (p *processes) release(logger *slog.Logger) {
	if p == nil {
		return
	}
	killed, err := session.Reap(p.run, p.isDetached)
	if err != nil {
		logger.Warn("could not look for processes the packages left running; the next start kills them", "err", err)
		return
	}
	if len(killed) > 0 {
		logger.Warn("killed processes the packages left running", "count", len(killed), "pids", killed)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rec.Runs = slices.DeleteFunc(p.rec.Runs, func(r recordedRun) bool { return r.Token == p.run })
	if err := p.writeLocked(); err != nil {
		logger.Warn("could not update the process record", "err", err)
	}
}

// token is the run's token, which every package process's marker carries.
func (p *processes) token() string {
	if p == nil {
		return ""
	}
	return p.run
}

// detach records pid, an executor's deliberately detached work, so no reap
// kills it (nor what it starts) and a later daemon can adopt or stop it.
func (p *processes) detach(extension string, pid int) error {
	ticks, ok := startTicks(pid)
	if !ok {
		return fmt.Errorf("process %d is not running", pid)
	}
	return p.spare(extension, protocol.ExecutionProcess{PID: pid, StartTicks: ticks})
}

// spare records proc as an executor's detached work when it runs with the
// start time it is named by; work already recorded is not recorded twice,
// and one that ended needs no record.
func (p *processes) spare(extension string, proc protocol.ExecutionProcess) error {
	if ticks, ok := startTicks(proc.PID); !ok || ticks != proc.StartTicks {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if slices.ContainsFunc(p.rec.Detached, func(w detached) bool { return w.PID == proc.PID && w.StartTicks == proc.StartTicks }) {
		return nil
	}
	p.rec.Detached = append(liveDetached(p.rec.Detached),
		detached{Extension: extension, PID: proc.PID, StartTicks: proc.StartTicks, Since: time.Now()})
	return p.writeLocked()
}

// isDetached reports whether pid is recorded detached work that still
// runs.
func (p *processes) isDetached(pid int) bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	recorded := slices.Clone(p.rec.Detached)
	p.mu.Unlock()
	for _, w := range recorded {
		if w.PID == pid {
			ticks, ok := startTicks(pid)
			return ok && ticks == w.StartTicks
		}
	}
	return false
}

// liveDetached keeps the detached work that still runs.
func liveDetached(ws []detached) []detached {
	var out []detached
	for _, w := range ws {
		if ticks, ok := startTicks(w.PID); ok && ticks == w.StartTicks {
			out = append(out, w)
		}
	}
	return out
}

// startTicks is a process's start time from /proc, false when it is not
// running (or a zombie).
func startTicks(pid int) (uint64, bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(stat[i+1:])
	// After the command: state is field 3 of stat(5), starttime field 22.
	if len(f) < 20 || f[0][0] == 'Z' || f[0][0] == 'X' {
		return 0, false
	}
	ticks, err := strconv.ParseUint(string(f[19]), 10, 64)
	return ticks, err == nil
}

func readProcessRecord(path string) (processRecord, error) {
	var rec processRecord
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return rec, nil
	}
	if err != nil {
		return rec, fmt.Errorf("reading the process record %s: %w", path, err)
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, fmt.Errorf("the process record %s is damaged (%v): remove it to start; processes an earlier daemon's packages left running are then not stopped", path, err)
	}
	return rec, nil
}

func (p *processes) write() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.writeLocked()
}

// writeLocked replaces the record atomically, owner-only, synced (p.mu
// held).
func (p *processes) writeLocked() error {
	data, err := json.Marshal(p.rec)
	if err != nil {
		return err
	}
	// A new file, never through a link planted where the temporary goes.
	tmp := p.path + ".tmp"
	_ = os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("recording the run in %s: %w", p.path, err)
	}
	_, err = f.Write(data)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p.path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("recording the run in %s: %w", p.path, err)
	}
	return nil
}

// Shutdown stops the daemon as Close does, but gives its packages at most
// StopGrace to stop on their own, and none once ctx ends: the packages
// still stopping then are killed, with their groups and every process that
// carries the run's marker. It returns ctx's error when ctx ended the wait.
func (d *Daemon) Shutdown(ctx context.Context) error {
	bounded, cancel := context.WithTimeout(ctx, StopGrace)
	defer cancel()
	d.shutdown(bounded)
	switch {
	case ctx.Err() != nil:
		d.logger.Warn("open-conduit stopped at once: the packages still stopping were killed")
		return ctx.Err()
	case bounded.Err() != nil:
		d.logger.Warn("open-conduit stopped: packages that had not stopped within the grace period were killed", "grace", StopGrace)
	default:
		d.logger.Info("open-conduit stopped")
	}
	return nil
}

// persistRecovery is execution.persist_recovery once the service has
// judged the caller: a process it names that runs must run with that start
// time and, when it carries a launch marker, descend from the calling
// package, or the call is refused before anything is written; the engine
// then stores the metadata under the lease, and only then is the process
// spared from the package's reaps, so a refused observer spares nothing.
func (d *Daemon) persistRecovery(ctx context.Context, pkg string, p protocol.ExecutionPersistRecoveryParams) error {
	if proc := p.Process; proc != nil {
		if proc.PID <= 1 || proc.StartTicks == 0 {
			return protocol.Errorf(protocol.ErrInvalid, "%s: process names pid %d started at %d; name the execution's process by its pid and its start time (field 22 of /proc/PID/stat)",
				protocol.MethodExecutionPersistRecovery, proc.PID, proc.StartTicks)
		}
		if ticks, ok := startTicks(proc.PID); ok && ticks != proc.StartTicks {
			return protocol.Errorf(protocol.ErrInvalid, "%s: process %d did not start at %d; name the process the execution runs in",
				protocol.MethodExecutionPersistRecovery, proc.PID, proc.StartTicks)
		}
		if _, name, marked := session.LaunchOf(proc.PID); marked && name != pkg {
			return protocol.Errorf(protocol.ErrUnauthorized, "%s: process %d is not one your package started",
				protocol.MethodExecutionPersistRecovery, proc.PID)
		}
	}
	if err := d.engine.PersistRecovery(ctx, pkg, p); err != nil {
		return err
	}
	if p.Process != nil {
		if err := d.procs.spare(pkg, *p.Process); err != nil {
			d.logger.Warn("could not record an execution's detached process; it may die with its package", "extension", pkg, "execution", p.Execution, "err", err)
		}
	}
	return nil
}
