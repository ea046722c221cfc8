package session

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"sync/atomic"
)

// MarkerEnv is the variable every extension process is started with, and
// its descendants inherit: RUN:NAME:N, the daemon run's token, the
// extension's name and the launch's number. A process that carries a
// run's marker belongs to that run's packages, however it left their
// process group, so the host can find it, while the run lasts and after a
// crash of the daemon, from what the daemon recorded.
const MarkerEnv = "OPEN_CONDUIT_RUN"

// NewRun returns a fresh run token: 32 hex digits, never reused, so a
// marker names one daemon run and no other.
func NewRun() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// launches numbers every launch in this process, so each process's marker
// is its own.
var launches atomic.Uint64

// marker is the value a new launch of the extension carries.
func marker(run, name string) string {
	return run + ":" + name + ":" + strconv.FormatUint(launches.Add(1), 10)
}

// runPrefix is what every marker of run begins with.
func runPrefix(run string) string { return run + ":" }

// markedEnv is env with the marker last, replacing any value of the
// variable the operator granted: the host's marker is the one that counts.
func markedEnv(env []string, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, MarkerEnv+"=") {
			out = append(out, kv)
		}
	}
	return append(out, MarkerEnv+"="+value)
}
