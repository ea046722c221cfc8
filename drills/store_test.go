package drills

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/internal/daemontest"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// storeNS is the probe's namespace the store drills write to.
const storeNS = "probe.store"

// storeKey names write i.
func storeKey(i int) string { return fmt.Sprintf("k%05d", i) }

// storeValue is write i's value, size bytes that do not compress, so a few
// hundred of them span many of the store's blocks.
func storeValue(i, size int) string {
	var b []byte
	for seed := sha256.Sum256([]byte(storeKey(i))); len(b) < size; seed = sha256.Sum256(seed[:]) {
		b = hex.AppendEncode(b, seed[:])
	}
	return string(b[:size])
}

// storeWrite commits keys [from, to), each in its own kv.commit, and wants
// every one acknowledged.
func storeWrite(t *testing.T, e *daemontest.Env, from, to, size int) {
	t.Helper()
	for i := from; i < to; i++ {
		a := e.HostCall("", protocol.MethodKVCommit, protocol.KVCommitParams{Puts: []protocol.KVPut{{Namespace: storeNS, Key: storeKey(i), Value: []byte(storeValue(i, size))}}})
		if a.Code != "" {
			t.Fatalf("kv.commit %d: %s %s", i, a.Code, a.Message)
		}
	}
}

// storeGet reads key i: found and right, or the host's refusal code.
func storeGet(t *testing.T, e *daemontest.Env, i, size int) (found bool, code string) {
	t.Helper()
	a := e.HostCall("", protocol.MethodKVGet, protocol.KVGetParams{Namespace: storeNS, Key: storeKey(i)})
	if a.Code != "" {
		return false, a.Code
	}
	var r protocol.KVGetResult
	if err := json.Unmarshal(a.Result, &r); err != nil {
		t.Fatal(err)
	}
	if r.Found && string(r.Value) != storeValue(i, size) {
		t.Fatalf("key %d read back wrong", i)
	}
	return r.Found, ""
}

// storeCount counts the keys of [0, n) that read back.
func storeCount(t *testing.T, e *daemontest.Env, n, size int) int {
	t.Helper()
	found := 0
	for i := range n {
		if ok, code := storeGet(t, e, i, size); code != "" {
			t.Fatalf("kv.get %d: %s", i, code)
		} else if ok {
			found++
		}
	}
	return found
}

// storeStartWith runs serve with extra flags and waits until it runs its
// configuration.
func storeStartWith(e *daemontest.Env, args ...string) {
	e.T.Helper()
	e.Launch("", nil, append([]string{"--config", e.Config}, args...)...)
	storeWaitRunning(e)
}

func storeWaitRunning(e *daemontest.Env) {
	e.T.Helper()
	e.Eventually("the daemon running its configuration", func() bool {
		st, err := e.C.Status(context.Background())
		return err == nil && st.PID == e.Cmd.Process.Pid && st.Phase == client.PhaseRunning
	})
}

// storeRefused runs serve expecting it to refuse the start, and returns
// what it printed. A serve that starts instead is stopped and fails the
// test.
func storeRefused(t *testing.T, e *daemontest.Env, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), daemontest.Deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.OpenConduit, append([]string{"serve", "--state", e.State, "--config", e.Config}, args...)...)
	cmd.Env = append(os.Environ(), daemontest.Secrets...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("serve %v started instead of refusing:\n%s", args, out)
	}
	if err == nil {
		t.Fatalf("serve %v exited 0 instead of refusing:\n%s", args, out)
	}
	return string(out)
}

// storeCheck is doctor's check of that name, failing the test when there
// is none.
func storeCheck(t *testing.T, e *daemontest.Env, name string, deep bool) client.Check {
	t.Helper()
	doc, err := e.C.Doctor(context.Background(), client.DoctorOptions{Deep: deep})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range doc.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("doctor has no %q check: %+v", name, doc.Checks)
	return client.Check{}
}

// storeHasCheck reports whether doctor runs a check of that name.
func storeHasCheck(t *testing.T, e *daemontest.Env, name string) bool {
	t.Helper()
	doc, err := e.C.Doctor(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range doc.Checks {
		if c.Name == name {
			return true
		}
	}
	return false
}

// storeFile is the largest file in the store whose name ends in suffix.
func storeFile(t *testing.T, e *daemontest.Env, suffix string) string {
	t.Helper()
	dir := filepath.Join(e.State, "store")
	best, size := "", int64(-1)
	entries, _ := os.ReadDir(dir)
	for _, en := range entries {
		if fi, err := en.Info(); err == nil && strings.HasSuffix(en.Name(), suffix) && fi.Size() > size {
			best, size = filepath.Join(dir, en.Name()), fi.Size()
		}
	}
	if best == "" {
		t.Fatalf("no %s file in %s", suffix, dir)
	}
	return best
}

// storeNewest is the store's file of the highest number among those
// matching pattern.
func storeNewest(t *testing.T, e *daemontest.Env, pattern string) string {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(e.State, "store", pattern))
	if len(matches) == 0 {
		t.Fatalf("no %s file in the store", pattern)
	}
	return matches[len(matches)-1]
}

func storeSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// storeWritten is where the WAL at path's bytes end: the store sizes each
// WAL's file ahead of its records, and damage past them would hit zeros.
func storeWritten(t *testing.T, path string) int64 {
	t.Helper()
	end, err := pebblekv.WrittenEnd(path)
	if err != nil {
		t.Fatal(err)
	}
	return end
}

func storeFlip(t *testing.T, path string, offset int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := []byte{0}
	if _, err := f.ReadAt(b, offset); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, offset); err != nil {
		t.Fatal(err)
	}
}

// storeListing is the store's files and sizes, to show a refused start
// changed none (Pebble's lock file aside).
func storeListing(e *daemontest.Env) string {
	var b strings.Builder
	entries, _ := os.ReadDir(filepath.Join(e.State, "store"))
	for _, en := range entries {
		if fi, err := en.Info(); err == nil && en.Name() != "LOCK" {
			fmt.Fprintf(&b, "%s %d %v\n", en.Name(), fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return b.String()
}

// TestDrillStoreMissingOrEmptyRefusesStart: a state directory that ran a
// store refuses to start on none, an emptied one or another one, with the
// remedy, until --accept-store-loss; the flag is for one start.
func TestDrillStoreMissingOrEmptyRefusesStart(t *testing.T) {
	for _, tc := range []struct {
		name    string
		damage  func(t *testing.T, e *daemontest.Env)
		refused bool
	}{
		{"nothing happened to the store", func(*testing.T, *daemontest.Env) {}, false},
		{"store directory deleted", func(t *testing.T, e *daemontest.Env) {
			if err := os.RemoveAll(filepath.Join(e.State, "store")); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"store emptied", func(t *testing.T, e *daemontest.Env) {
			entries, _ := os.ReadDir(filepath.Join(e.State, "store"))
			for _, en := range entries {
				if err := os.RemoveAll(filepath.Join(e.State, "store", en.Name())); err != nil {
					t.Fatal(err)
				}
			}
		}, true},
		{"store replaced by another state directory's", func(t *testing.T, e *daemontest.Env) {
			other := daemontest.New(t, bins)
			other.Start()
			other.Stop()
			store := filepath.Join(e.State, "store")
			if err := os.RemoveAll(store); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(other.State, "store"), store); err != nil {
				t.Fatal(err)
			}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := daemontest.New(t, bins)
			e.Start()
			storeWrite(t, e, 0, 1, 64)
			e.Stop()
			tc.damage(t, e)
			if !tc.refused {
				e.Start()
				if storeCount(t, e, 1, 64) != 1 {
					t.Fatal("negative control: the write is gone after a plain restart")
				}
				return
			}
			before := storeListing(e)
			out := storeRefused(t, e)
			for _, want := range []string{"refusing to start", filepath.Join(e.State, "store"), "backup", "--accept-store-loss"} {
				if !strings.Contains(out, want) {
					t.Errorf("the refusal does not say %q:\n%s", want, out)
				}
			}
			if after := storeListing(e); after != before {
				t.Errorf("the refused start changed the store:\n%s\n%s", before, after)
			}
			storeStartWith(e, "--accept-store-loss")
			if c := storeCheck(t, e, "store recovery", false); c.Status != protocol.CheckWarn || c.Code != "store_loss_accepted" {
				t.Errorf("doctor after accepting the loss: %+v", c)
			}
			if storeCount(t, e, 1, 64) != 0 {
				t.Error("the write survived a store that was lost")
			}
			e.Stop()
			e.Start()
			if storeHasCheck(t, e, "store recovery") {
				t.Error("the accepted loss is still reported after the next start")
			}
			report(t, "%s: start refused, then accepted with --accept-store-loss; the next plain start runs", tc.name)
		})
	}
}

// storeFlushed leaves the daemon killed after a start that flushed every
// key from the WAL into an sstable and recorded it in the MANIFEST, and
// returns the MANIFEST Pebble uses now (its marker file names it).
func storeFlushed(t *testing.T, e *daemontest.Env) string {
	t.Helper()
	e.Stop()
	e.Start()
	e.Kill()
	markers, _ := filepath.Glob(filepath.Join(e.State, "store", "marker.manifest.*"))
	if len(markers) != 1 {
		t.Fatalf("Pebble's MANIFEST marker: %v", markers)
	}
	parts := strings.SplitN(filepath.Base(markers[0]), ".", 4)
	return filepath.Join(e.State, "store", parts[3])
}

// TestDrillStoreLostCommitsRefuseStart: a WAL or MANIFEST that lost
// acknowledged commits or synced edits (Pebble recovers silently up to the
// damage) refuses the start, naming the file and offset, and changes
// nothing; --accept-store-loss starts on what is left.
func TestDrillStoreLostCommitsRefuseStart(t *testing.T) {
	n := scale(40, 200)
	for _, tc := range []struct {
		name string
		// damage runs with the daemon started and every key acknowledged,
		// and leaves it stopped and the store damaged.
		damage func(t *testing.T, e *daemontest.Env)
		says   string // what the refusal must say, beside the remedy
		accept bool   // whether --accept-store-loss starts
		loses  bool   // whether keys are gone once accepted
	}{
		{"WAL truncated", func(t *testing.T, e *daemontest.Env) {
			e.Kill()
			wal := storeNewest(t, e, "*.log")
			if err := os.Truncate(wal, storeWritten(t, wal)*2/3); err != nil {
				t.Fatal(err)
			}
		}, ".log at offset", true, true},
		{"WAL byte flipped", func(t *testing.T, e *daemontest.Env) {
			e.Kill()
			wal := storeNewest(t, e, "*.log")
			storeFlip(t, wal, storeWritten(t, wal)/2)
		}, ".log at offset", true, true},
		{"MANIFEST truncated", func(t *testing.T, e *daemontest.Env) {
			manifest := storeFlushed(t, e)
			if err := os.Truncate(manifest, storeSize(t, manifest)-10); err != nil {
				t.Fatal(err)
			}
		}, "was truncated at offset", true, false},
		{"MANIFEST byte flipped in its last edit", func(t *testing.T, e *daemontest.Env) {
			manifest := storeFlushed(t, e)
			storeFlip(t, manifest, storeSize(t, manifest)-5)
		}, "is damaged at offset", true, false},
		{"MANIFEST byte flipped in its first edit", func(t *testing.T, e *daemontest.Env) {
			storeFlip(t, storeFlushed(t, e), 20)
		}, "MANIFEST", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := daemontest.New(t, bins)
			e.Start()
			storeWrite(t, e, 0, n, 200)
			tc.damage(t, e)
			before := storeListing(e)
			out := storeRefused(t, e)
			t.Logf("serve refused:\n%s", out)
			for _, want := range []string{"refusing to start", tc.says, "backup", "--accept-store-loss"} {
				if !strings.Contains(out, want) {
					t.Errorf("the refusal does not say %q:\n%s", want, out)
				}
			}
			if after := storeListing(e); after != before {
				t.Errorf("the refused start changed the store:\n%s\n%s", before, after)
			}
			if !tc.accept {
				storeRefused(t, e, "--accept-store-loss")
				report(t, "%s: start refused, naming the file; Pebble cannot open the store, so only a backup or a new store helps", tc.name)
				return
			}
			storeStartWith(e, "--accept-store-loss")
			if c := storeCheck(t, e, "store recovery", false); c.Status != protocol.CheckWarn || !strings.Contains(c.Detail, tc.says) {
				t.Errorf("doctor after accepting the loss: %+v", c)
			}
			kept := storeCount(t, e, n, 200)
			if tc.loses && kept >= n {
				t.Errorf("all %d keys are there: the damage lost nothing, so the drill proves nothing", n)
			}
			e.Stop()
			e.Start()
			report(t, "%s: %d acknowledged writes, %d lost; start refused naming the file, then accepted with --accept-store-loss", tc.name, n, n-kept)
		})
	}
}

// TestDrillStoreDamagedSSTableIsAnError: a flipped byte in an sstable
// block is an error naming the file, never a panic; the daemon keeps
// running, the rest of the store reads and writes, doctor and doctor
// --deep name the file.
func TestDrillStoreDamagedSSTableIsAnError(t *testing.T) {
	const n, size = 300, 1000
	e := daemontest.New(t, bins)
	e.Start()
	storeWrite(t, e, 0, n, size)
	e.Stop()
	e.Start() // the start flushes what the WAL held into an sstable
	if c := storeCheck(t, e, "store deep check", true); c.Status != protocol.CheckOK {
		t.Fatalf("negative control, the deep check of a sound store: %+v", c)
	}
	e.Stop()
	sst := storeFile(t, e, ".sst")
	storeFlip(t, sst, storeSize(t, sst)/2)
	e.Start()
	pid := e.Cmd.Process.Pid

	bad := 0
	for i := range n {
		if _, code := storeGet(t, e, i, size); code != "" {
			bad++
			if code != protocol.CodeInternal {
				t.Errorf("a read of the damaged block answered %q, want internal (the file is named in the daemon's log)", code)
			}
		}
	}
	if bad == 0 || bad == n {
		t.Fatalf("%d of %d keys unreadable: want the damaged block's only", bad, n)
	}
	if st := e.Status(); st.PID != pid || st.Phase != client.PhaseRunning {
		t.Fatalf("the daemon did not survive the damaged reads: %+v\n%s", st, e.Log)
	}
	if log := e.Log.String(); strings.Contains(log, "panic") || !strings.Contains(log, sst) {
		t.Errorf("the daemon panicked, or its log does not name %s:\n%s", sst, log)
	}
	storeWrite(t, e, n, n+1, size)
	if ok, code := storeGet(t, e, n, size); !ok || code != "" {
		t.Errorf("a write after the damage does not read back: %v %s", ok, code)
	}
	if c := storeCheck(t, e, "store", false); c.Status != protocol.CheckFail || c.Code != "store_damaged" || !strings.Contains(c.Detail, sst) {
		t.Errorf("doctor's store check: %+v", c)
	}
	if c := storeCheck(t, e, "store deep check", true); c.Status != protocol.CheckFail || !strings.Contains(c.Detail, sst) {
		t.Errorf("doctor --deep: %+v", c)
	}
	out, err := exec.Command(bins.OpenConduit, "doctor", "--deep", "--state", e.State).CombinedOutput()
	if err == nil || !strings.Contains(string(out), sst) {
		t.Errorf("open-conduit doctor --deep: %v\n%s", err, out)
	}
	report(t, "a flipped byte in %s: %d of %d keys unreadable (an error naming the file), the rest read, writes go on, the daemon kept running", filepath.Base(sst), bad, n)
}

// storeNamespace holds a user and mount namespace in which the state
// directory's store is a small tmpfs, for as long as the test runs. It
// skips the test, naming what is missing, when the machine cannot give one.
type storeNamespace struct {
	pid int
}

func newStoreNamespace(t *testing.T, store string, size string) *storeNamespace {
	t.Helper()
	for _, tool := range []string{"unshare", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("this drill needs %s (util-linux) to mount a small filesystem: %v", tool, err)
		}
	}
	if err := os.MkdirAll(store, 0o700); err != nil {
		t.Fatal(err)
	}
	holder := exec.Command("unshare", "--user", "--map-root-user", "--mount", "--propagation", "private",
		"sh", "-c", `mount -t tmpfs -o size="$2",mode=0700 tmpfs "$1" && echo mounted && exec sleep 3600`, "sh", store, size)
	var stderr strings.Builder
	holder.Stderr = &stderr
	stdout, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Skipf("this drill needs a user and mount namespace (unshare) to mount a small tmpfs: %v", err)
	}
	t.Cleanup(func() {
		_ = holder.Process.Kill()
		_ = holder.Wait()
	})
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "mounted" {
		_ = holder.Wait()
		t.Skipf("this drill needs a user and mount namespace in which to mount a small tmpfs, which this machine refused: %s", strings.TrimSpace(stderr.String()))
	}
	return &storeNamespace{pid: holder.Process.Pid}
}

// command runs name with args inside the namespace.
func (ns *storeNamespace) command(name string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--target", strconv.Itoa(ns.pid), "--user", "--mount", "--preserve-credentials", "--", name}, args...)...)
}

// serve starts the daemon inside the namespace and waits until it runs.
func (ns *storeNamespace) serve(e *daemontest.Env) {
	e.T.Helper()
	e.Log = &daemontest.SyncBuffer{}
	e.Cmd = ns.command(bins.OpenConduit, "serve", "--state", e.State, "--config", e.Config)
	e.Cmd.Env = append(os.Environ(), daemontest.Secrets...)
	e.Cmd.Stdout, e.Cmd.Stderr = e.Log, e.Log
	if err := e.Cmd.Start(); err != nil {
		e.T.Fatal(err)
	}
	storeWaitRunning(e)
}

// TestDrillStoreDiskFull: with the store's disk full, a write is refused at
// once with storage_full and nothing hangs: reads work, another package
// answers, doctor says so; once space returns writes succeed with no
// restart, and no acknowledged write is lost, across a kill -9 too.
func TestDrillStoreDiskFull(t *testing.T) {
	const size = 200
	before, during := scale(20, 200), scale(10, 100)
	e := daemontest.New(t, bins)
	store := filepath.Join(e.State, "store")
	ns := newStoreNamespace(t, store, "64m")
	ns.serve(e)
	storeWrite(t, e, 0, before, size)

	fill := ns.command("sh", "-c", `dd if=/dev/zero of="$1" bs=65536 2>/dev/null; test -s "$1"`, "sh", filepath.Join(store, "filler"))
	if out, err := fill.CombinedOutput(); err != nil {
		t.Fatalf("filling the store's tmpfs: %v\n%s", err, out)
	}
	var slowest time.Duration
	for i := before; i < before+during; i++ {
		start := time.Now()
		a := e.HostCall("", protocol.MethodKVCommit, protocol.KVCommitParams{Puts: []protocol.KVPut{{Namespace: storeNS, Key: storeKey(i), Value: []byte(storeValue(i, size))}}})
		slowest = max(slowest, time.Since(start))
		if a.Code != protocol.CodeStorageFull {
			t.Fatalf("a write on a full disk answered %q %s, want storage_full", a.Code, a.Message)
		}
	}
	emit := e.HostCall("", protocol.MethodKVCommit, protocol.KVCommitParams{Emissions: []protocol.Emission{{
		Scope: "alpha", Source: "probe", DeliveryID: "full", Type: "probe.seen",
		Payload: protocol.Payload{Schema: "probe.seen.v1", Data: []byte(`{}`)},
	}}})
	if emit.Code != protocol.CodeStorageFull {
		t.Errorf("an Event emitted on a full disk: %q %s", emit.Code, emit.Message)
	}
	if got := storeCount(t, e, before, size); got != before {
		t.Errorf("reads on a full disk: %d of %d", got, before)
	}
	res, err := e.C.Call(context.Background(), "hello", client.CallRequest{Operation: "hello.greet", Scope: "beta", Input: map[string]any{"name": "full"}})
	if err != nil || res.Code != protocol.CodeStorageFull {
		t.Errorf("another package on a full disk: %+v %v", res, err)
	}
	if c := storeCheck(t, e, "store", false); c.Status != protocol.CheckWarn || c.Code != protocol.CodeStorageFull {
		t.Errorf("doctor on a full disk: %+v", c)
	}

	if out, err := ns.command("rm", filepath.Join(store, "filler")).CombinedOutput(); err != nil {
		t.Fatalf("freeing the tmpfs: %v\n%s", err, out)
	}
	storeWrite(t, e, before+during, before+2*during, size)
	if c := storeCheck(t, e, "store", false); c.Status != protocol.CheckOK {
		t.Errorf("doctor once space returned: %+v", c)
	}
	e.Kill()
	ns.serve(e)
	lost, phantom := 0, 0
	for i := range before + 2*during {
		found, code := storeGet(t, e, i, size)
		refused := i >= before && i < before+during
		switch {
		case code != "":
			t.Fatalf("kv.get %d: %s", i, code)
		case refused && found:
			phantom++
		case !refused && !found:
			lost++
		}
	}
	if lost != 0 || phantom != 0 {
		t.Errorf("after kill -9: %d acknowledged writes lost, %d refused writes present", lost, phantom)
	}
	report(t, "disk full: %d writes refused storage_full (slowest answer %s), reads and another package answered; %d writes after space returned with no restart; after kill -9, %d of %d acknowledged writes lost",
		during, slowest.Round(time.Millisecond), during, lost, before+during)
}
