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

// proc is one process as a scan sees it: its session and its marker.
type proc struct {
	pid, sid int
	marker   string
}

// stats answers a process's parent and whether it has exited (a zombie),
// read from its stat line only when a reap asks: generating the stat line
// of every process cost more than all the rest of a scan (about 12 µs a
// process, against a few for the session and the environment).
type stats interface {
	// parent returns pid's parent, or 0 when it cannot be read.
	parent(pid int) int
	// exited reports whether pid is gone or a zombie.
	exited(pid int) bool
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
		targets := reapTargets(procs, statReader{}, match, keep)
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
func reapTargets(procs map[int]proc, st stats, match func(string) bool, keep func(int) bool) []int {
	self := os.Getpid()
	parents := map[int]int{}
	parent := func(pid int) int {
		ppid, ok := parents[pid]
		if !ok {
			ppid = st.parent(pid)
			parents[pid] = ppid
		}
		return ppid
	}
	safe := map[int]bool{}
	spared := func(p proc) bool {
		if len(safe) == 0 {
			for pid, n := self, 0; pid > 1 && n < 64; n++ {
				safe[pid] = true
				pid = parent(pid)
			}
		}
		if safe[p.pid] || keep(p.sid) {
			return true
		}
		for pid, n := p.pid, 0; pid > 1 && n < 64; n++ {
			if keep(pid) {
				return true
			}
			pid = parent(pid)
		}
		return false
	}
	ownSid, _ := getsid(self)
	sessions := map[int]bool{}
	for _, p := range procs {
		if p.marker != "" && match(p.marker) && !spared(p) && p.sid > 1 && p.sid != ownSid {
			sessions[p.sid] = true
		}
	}
	var out []int
	for _, p := range procs {
		if ((p.marker != "" && match(p.marker)) || sessions[p.sid]) && !spared(p) && !st.exited(p.pid) {
			out = append(out, p.pid)
		}
	}
	return out
}

// scanProcs reads every process's session (getsid, a system call) and
// marker (its environment). Processes that are gone are left out; one
// whose environment cannot be read (another user's, a zombie's) has no
// marker. Parents and states are read only when asked (statReader).
func scanProcs() (map[int]proc, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	procs := make(map[int]proc, len(ents))
	buf := make([]byte, 16<<10)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		sid, ok := getsid(pid)
		if !ok {
			continue
		}
		p := proc{pid: pid, sid: sid}
		var env []byte
		if env, buf = readProcFile("/proc/"+e.Name()+"/environ", buf); env != nil {
			p.marker = markerIn(env)
		}
		procs[pid] = p
	}
	if len(procs) == 0 {
		return nil, errors.New("listing processes: /proc shows none; is it mounted?")
	}
	return procs, nil
}

// getsid returns pid's session, or false when it is gone.
func getsid(pid int) (int, bool) {
	sid, _, errno := syscall.RawSyscall(syscall.SYS_GETSID, uintptr(pid), 0, 0)
	return int(sid), errno == 0
}

// readProcFile reads a /proc file whole into buf, growing it as needed,
// and returns the bytes (nil when the file cannot be read) and the buffer
// for the next read. os.ReadFile would stat the file first (a /proc file
// says it is empty) and allocate for each.
func readProcFile(path string, buf []byte) ([]byte, []byte) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, buf
	}
	defer syscall.Close(fd)
	n := 0
	for {
		if n == len(buf) {
			buf = append(buf, make([]byte, len(buf))...)
		}
		r, err := syscall.Read(fd, buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, buf
		}
		if r == 0 {
			return buf[:n], buf
		}
		n += r
	}
}

// statReader reads parents and states from /proc/PID/stat.
type statReader struct{}

func (statReader) parent(pid int) int {
	f, ok := statFields(pid)
	if !ok || len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(string(f[1]))
	return ppid
}

func (statReader) exited(pid int) bool {
	f, ok := statFields(pid)
	return !ok || len(f) < 1 || f[0][0] == 'Z' || f[0][0] == 'X'
}

// statFields are the fields of pid's stat line after its command name,
// which may hold spaces and parentheses: they start after the last ')'.
func statFields(pid int) ([][]byte, bool) {
	stat, _ := readProcFile("/proc/"+strconv.Itoa(pid)+"/stat", make([]byte, 512))
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil, false
	}
	return bytes.Fields(stat[i+1:]), true
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
