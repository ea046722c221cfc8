package session

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// reapPasses bounds how often a reap scans again for processes forked
// while it killed their parents.
const reapPasses = 10

// Reap kills every process whose marker (MarkerEnv) belongs to run, and
// every process in a session one of them is in, except the daemon itself
// and its ancestors and the processes keep spares. keep is asked about a
// process, its ancestors and its session's leader; one it answers true for
// spares the process (an executor's deliberately detached work and what it
// started). It returns the processes it killed. A process that both left
// its package's session and cleared its environment carries no marker and
// is beyond it.
func Reap(run string, keep func(pid int) bool) ([]int, error) {
	prefix := runPrefix(run)
	return reap(func(m string) bool { return len(m) > len(prefix) && m[:len(prefix)] == prefix }, keep)
}

// reapMarker kills what is left of one launch: the processes carrying its
// exact marker and those in their sessions.
func reapMarker(value string, keep func(pid int) bool) {
	_, _ = reap(func(m string) bool { return m == value }, keep)
}

// proc is one process as /proc shows it.
type proc struct {
	pid, ppid, sid int
	marker         string
}

func reap(match func(marker string) bool, keep func(pid int) bool) ([]int, error) {
	if keep == nil {
		keep = func(int) bool { return false }
	}
	killed := map[int]bool{}
	var out []int
	for range reapPasses {
		procs, err := scanProcs()
		if err != nil {
			return out, err
		}
		targets := reapTargets(procs, match, keep)
		fresh := 0
		for _, pid := range targets {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				continue
			}
			if !killed[pid] {
				killed[pid] = true
				out = append(out, pid)
				fresh++
			}
		}
		if fresh == 0 {
			break
		}
	}
	return out, nil
}

// reapTargets are the processes to kill: those match accepts and those in
// their sessions, never this process, its ancestors, its own session, or
// what keep spares.
func reapTargets(procs map[int]proc, match func(string) bool, keep func(int) bool) []int {
	self := os.Getpid()
	safe := map[int]bool{}
	for pid, n := self, 0; pid > 1 && n < 64; n++ {
		safe[pid] = true
		pid = procs[pid].ppid
	}
	ownSid := procs[self].sid
	spared := func(p proc) bool {
		if safe[p.pid] || keep(p.sid) {
			return true
		}
		for pid, n := p.pid, 0; pid > 1 && n < 64; n++ {
			if keep(pid) {
				return true
			}
			pid = procs[pid].ppid
		}
		return false
	}
	sessions := map[int]bool{}
	for _, p := range procs {
		if p.marker != "" && match(p.marker) && !spared(p) && p.sid > 1 && p.sid != ownSid {
			sessions[p.sid] = true
		}
	}
	var out []int
	for _, p := range procs {
		if ((p.marker != "" && match(p.marker)) || sessions[p.sid]) && !spared(p) {
			out = append(out, p.pid)
		}
	}
	return out
}

// scanProcs reads every live process: its parent, its session and its
// marker. Zombies and processes that are gone or not readable (another
// user's) are left out.
func scanProcs() (map[int]proc, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	procs := make(map[int]proc, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		p, ok := readProc(pid)
		if ok {
			procs[pid] = p
		}
	}
	if len(procs) == 0 {
		return nil, errors.New("listing processes: /proc shows none; is it mounted?")
	}
	return procs, nil
}

// readProc reads one process's stat line and environment.
func readProc(pid int) (proc, bool) {
	base := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(base + "/stat")
	if err != nil {
		return proc{}, false
	}
	// The command name may hold spaces and parentheses: the fields start
	// after the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return proc{}, false
	}
	f := bytes.Fields(stat[i+1:])
	if len(f) < 4 || f[0][0] == 'Z' || f[0][0] == 'X' {
		return proc{}, false
	}
	ppid, _ := strconv.Atoi(string(f[1]))
	sid, _ := strconv.Atoi(string(f[3]))
	p := proc{pid: pid, ppid: ppid, sid: sid}
	if env, err := os.ReadFile(base + "/environ"); err == nil {
		p.marker = markerIn(env)
	}
	return p, true
}

// markerIn finds MarkerEnv's value in a NUL-separated environment.
func markerIn(env []byte) string {
	key := []byte(MarkerEnv + "=")
	for len(env) > 0 {
		entry := env
		if j := bytes.IndexByte(env, 0); j >= 0 {
			entry, env = env[:j], env[j+1:]
		} else {
			env = nil
		}
		if bytes.HasPrefix(entry, key) {
			return string(entry[len(key):])
		}
	}
	return ""
}

// LaunchOf reads the marker process pid carries: the daemon run and the
// extension whose launch it descends from. ok is false when it carries
// none (or is gone, or its environment cannot be read).
func LaunchOf(pid int) (run, name string, ok bool) {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return "", "", false
	}
	parts := strings.SplitN(markerIn(env), ":", 3)
	if len(parts) != 3 {
		return "", "", false
	}
	return parts[0], parts[1], true
}
