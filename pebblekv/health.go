package pebblekv

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/open-conduit/open-conduit/protocol"
)

// Damage is one store file Pebble found damaged.
type Damage struct {
	// Path is the damaged file; "" when Pebble did not say which.
	Path string
	// Detail is what Pebble found there (a checksum mismatch, …), on one
	// line.
	Detail string
}

// DamageError is a read that met a damaged store file: what the file holds
// cannot be read, while the rest of the store can. It wraps ErrDamaged and
// Pebble's error.
type DamageError struct {
	Damage
	err error
}

// Error names the file and says what to do.
func (e *DamageError) Error() string {
	what := "the store is damaged"
	if e.Path != "" {
		what = "the store file " + e.Path + " is damaged"
	}
	return fmt.Sprintf("pebblekv: %s (%s): what it holds cannot be read, the rest of the store still can; restore the store from a backup", what, e.Detail)
}

// Unwrap returns ErrDamaged and Pebble's error.
func (e *DamageError) Unwrap() []error { return []error{ErrDamaged, e.err} }

// Health is what the store met since Open.
type Health struct {
	// Damaged are the files Pebble found damaged, in the order it found
	// them.
	Damaged []Damage
	// Failed is why Pebble stopped (it wraps ErrFailed), nil while it runs.
	Failed error
	// BackgroundErrors counts Pebble's failed flushes and compactions,
	// which it retries; LastBackground is the latest, on one line.
	BackgroundErrors int
	LastBackground   string
}

// Replay is one WAL Pebble replayed at Open, as its recovery report says.
type Replay struct {
	// WAL is the file.
	WAL string
	// Offset is where Pebble stopped reading it: its end, the end of what
	// this WAL wrote in a recycled file, or the first record it could not
	// read (a torn tail or damage), after which it reads nothing more.
	Offset int64
	// Size is the file's size at Open; -1 when it could not be read.
	Size int64
	// End is where its bytes end at Open: Size less the zeros at its end,
	// the room the store preallocates ahead of a WAL's records; -1 when it
	// could not be read.
	End int64
	// Keys and Batches are what Pebble replayed from it.
	Keys, Batches int64
}

// walTrailer is the size of the chunk header Pebble ends each WAL it closes
// with; no record fits in it.
const walTrailer = 11

// Unread is how many bytes the WAL holds past where its replay stopped that
// could be records: End less Offset, or 0 when no more than the trailer
// Pebble ends a closed WAL with is left. More than 0 means a truncated or
// damaged record, unless the file is a recycled WAL whose earlier records
// run past this one's.
func (r Replay) Unread() int64 {
	if r.End-r.Offset <= walTrailer {
		return 0
	}
	return r.End - r.Offset
}

// Recovery is what Pebble reported when it recovered the store at Open.
type Recovery struct {
	// Replays are the WALs replayed, oldest first.
	Replays []Replay
	// Manifest is the MANIFEST Pebble read the store's files from; "" when
	// it could not be found.
	Manifest string
	// ManifestSize is its size in bytes, and ManifestValid how many of them,
	// from the start, read as whole records: Pebble ignores everything after
	// the first record it cannot read, without a word.
	ManifestSize, ManifestValid int64
}

// Health is what the store met since Open: damaged files, a failure,
// Pebble's background errors.
func (db *DB) Health() Health {
	h := &db.health
	h.mu.Lock()
	defer h.mu.Unlock()
	return Health{Damaged: append([]Damage(nil), h.damage...), Failed: h.failed,
		BackgroundErrors: h.backgrounds, LastBackground: h.lastBackground}
}

// Recovery is Pebble's report of the recovery at Open.
func (db *DB) Recovery() Recovery {
	h := &db.health
	h.mu.Lock()
	defer h.mu.Unlock()
	return Recovery{Replays: append([]Replay(nil), h.replays...), Manifest: h.manifest,
		ManifestSize: h.manifestSize, ManifestValid: h.manifestValid}
}

// Space is the free space on the store's filesystem and the reserve an
// Update must leave there (negative: not checked).
func (db *DB) Space() (free, reserve int64, err error) {
	db.life.RLock()
	defer db.life.RUnlock()
	free, err = db.space.free(db.dir)
	return free, db.reserve, err
}

// room refuses a batch of need bytes that would leave less than the
// reserve free: it takes about its size in the WAL, and again when its
// memtable is flushed. A filesystem whose free space cannot be read is let
// through (Pebble's own error then stands).
func (db *DB) room(need int64) error {
	if db.reserve < 0 {
		return nil
	}
	free, err := db.space.free(db.dir)
	if err != nil || free-2*need >= db.reserve {
		return nil
	}
	return protocol.Errorf(protocol.ErrStorageFull,
		"the disk holding the store %s has %s free, and a write must leave %s for the store to go on: nothing was written; free space on that disk and retry (writes resume by themselves)",
		db.dir, mib(free), mib(db.reserve+2*need))
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// named turns an error carrying Pebble's corruption report into a
// *DamageError naming the file; any other error is returned as it is.
func (db *DB) named(err error) error {
	var de *DamageError
	if err == nil || errors.As(err, &de) {
		return err
	}
	if info := pebble.ExtractDataCorruptionInfo(err); info != nil {
		return &DamageError{Damage: Damage{Path: info.Path, Detail: oneLine(info.Details)}, err: err}
	}
	if pebble.IsCorruptionError(err) {
		return &DamageError{Damage: Damage{Detail: oneLine(err)}, err: err}
	}
	return err
}

// oneLine is err's message without Pebble's detail lines.
func oneLine(err error) string {
	if err == nil {
		return ""
	}
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// fatalPanic is how Fatalf leaves Pebble: Pebble's callers of Fatalf do not
// expect it to return. Update, View and Open recover it into the error it
// carries; in Pebble's own goroutines it ends the process, as Pebble's
// default logger would.
type fatalPanic struct{ err error }

// recoverFatal turns a fatalPanic into *err and passes any other panic on.
func (db *DB) recoverFatal(err *error) {
	r := recover()
	if r == nil {
		return
	}
	f, ok := r.(fatalPanic)
	if !ok {
		panic(r)
	}
	*err = f.err
}

// health is what the store records of Pebble's reports.
type health struct {
	log   *slog.Logger
	quiet quietLog

	mu             sync.Mutex
	damage         []Damage
	failed         error
	backgrounds    int
	lastBackground string
	// replays are captured from Pebble's log while Open runs.
	replays                     []Replay
	manifest                    string
	manifestSize, manifestValid int64
	done                        bool
}

func (h *health) init(logger *slog.Logger) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	h.log = logger
}

// damaged records a file Pebble found damaged; Pebble's default ends the
// process instead.
func (h *health) damaged(info pebble.DataCorruptionInfo) {
	d := Damage{Path: info.Path, Detail: oneLine(info.Details)}
	h.add(nil, d)
	h.quiet.error(h.log, "store file damaged; restore the store from a backup", "component", "pebble", "file", d.Path, "detail", d.Detail)
}

// background records a flush or compaction that failed; Pebble retries it.
func (h *health) background(err error) {
	line := oneLine(err)
	h.mu.Lock()
	h.backgrounds++
	h.lastBackground = line
	h.mu.Unlock()
	h.quiet.error(h.log, "store background work failed; Pebble retries it", "component", "pebble", "err", line)
}

// fatal records that Pebble cannot go on and returns the panic that leaves
// it.
func (h *health) fatal(msg string) fatalPanic {
	err := fmt.Errorf("%w: Pebble failed (%s); restart the daemon, after freeing disk space if that was the cause: the store recovers every acknowledged write from its WAL", ErrFailed, msg)
	h.mu.Lock()
	if h.failed == nil {
		h.failed = err
	}
	h.mu.Unlock()
	h.log.Error("the store stopped: "+msg, "component", "pebble", "fatal", true)
	return fatalPanic{err: err}
}

func (h *health) failure() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failed
}

// walStop matches Pebble's report of one WAL's replay: "[JOB 1] WAL
// 000002: {…} stopped reading at offset: (dir/000002.log: 66522); replayed
// 500 keys in 500 batches". A test holds it to the pinned Pebble version.
var walStop = regexp.MustCompile(`stopped reading at offset: \((.*): (\d+)\); replayed (\d+) keys in (\d+) batches`)

// recovered captures a WAL replay from one of Pebble's informational lines
// while Open runs.
func (h *health) recovered(line string) {
	m := walStop.FindStringSubmatch(line)
	if m == nil {
		return
	}
	r := Replay{WAL: m[1], Size: -1, End: -1}
	r.Offset, _ = strconv.ParseInt(m[2], 10, 64)
	r.Keys, _ = strconv.ParseInt(m[3], 10, 64)
	r.Batches, _ = strconv.ParseInt(m[4], 10, 64)
	if size, end, err := extent(r.WAL); err == nil {
		r.Size, r.End = size, end
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.done {
		h.replays = append(h.replays, r)
	}
}

// opened ends the capture of the recovery report and reads the MANIFEST
// Pebble read (its marker file names it) for a damaged record.
func (h *health) opened(dir string) {
	manifest := ""
	if names, err := filepath.Glob(filepath.Join(dir, "marker.manifest.*")); err == nil {
		for _, n := range names {
			if parts := strings.SplitN(filepath.Base(n), ".", 4); len(parts) == 4 {
				manifest = filepath.Join(dir, parts[3])
			}
		}
	}
	var size, valid int64
	if fi, err := os.Stat(manifest); err == nil {
		size = fi.Size()
		valid, _ = manifestValid(manifest)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.done, h.manifest, h.manifestSize, h.manifestValid = true, manifest, size, valid
}

func (h *health) manifestPath() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.manifest
}

// quietLog logs an error line the first time, then at most once a minute
// while it repeats, with how often it did: a failure Pebble retries in a
// loop (a flush on a full disk) costs a line a minute, not thousands.
type quietLog struct {
	mu   sync.Mutex
	seen map[string]*repeats
}

type repeats struct {
	at time.Time
	n  int
}

// quietEvery is how often a repeating line is logged again.
const quietEvery = time.Minute

func (q *quietLog) error(l *slog.Logger, msg string, args ...any) {
	key := msg + fmt.Sprint(args...)
	// File numbers and offsets change from one retry to the next; the
	// failure does not.
	key = digits.ReplaceAllString(key, "#")
	now := time.Now()
	q.mu.Lock()
	if q.seen == nil || len(q.seen) > 256 {
		q.seen = map[string]*repeats{}
	}
	r := q.seen[key]
	if r != nil && now.Sub(r.at) < quietEvery {
		r.n++
		q.mu.Unlock()
		return
	}
	n := 0
	if r != nil {
		n = r.n
	}
	q.seen[key] = &repeats{at: now}
	q.mu.Unlock()
	if n > 0 {
		args = append(args, "repeated", n)
	}
	l.Error(msg, args...)
}

var digits = regexp.MustCompile(`[0-9]+`)

// slogLogger carries Pebble's log lines to the store's logger and its
// reports to the store's health.
type slogLogger struct {
	l *slog.Logger
	h *health
}

func logLine(format string, args []any) string {
	return strings.TrimSuffix(fmt.Sprintf(format, args...), "\n")
}

// Infof implements pebble.Logger. Pebble's informational lines (WAL and
// compaction chatter) are the daemon's debug level: an operator's log at the
// default level shows only what needs a look. The recovery report among
// them is kept (Recovery).
func (s slogLogger) Infof(format string, args ...any) {
	line := logLine(format, args)
	if s.h != nil {
		s.h.recovered(line)
	}
	s.l.Debug(line, "component", "pebble")
}

// Errorf implements pebble.Logger; a line that repeats is logged once a
// minute with its count.
func (s slogLogger) Errorf(format string, args ...any) {
	if s.h == nil {
		s.l.Error(logLine(format, args), "component", "pebble")
		return
	}
	s.h.quiet.error(s.l, logLine(format, args), "component", "pebble")
}

// Fatalf implements pebble.Logger: Pebble cannot go on. The store records
// why and stops answering (ErrFailed), and the caller leaves by a panic
// that Update, View and Open turn back into that error.
func (s slogLogger) Fatalf(format string, args ...any) {
	msg := logLine(format, args)
	if s.h == nil {
		s.l.Error(msg, "component", "pebble", "fatal", true)
		panic(fatalPanic{err: fmt.Errorf("%w: %s", ErrFailed, msg)})
	}
	panic(s.h.fatal(msg))
}
