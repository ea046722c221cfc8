package artifacts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// fixture is a store on a real Pebble store in a temporary directory.
type fixture struct {
	db  *pebblekv.DB
	dir string
	s   *Store
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root := t.TempDir()
	db, err := pebblekv.Open(filepath.Join(root, "store"), &pebblekv.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	dir := filepath.Join(root, "artifacts")
	s, err := Open(db, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &fixture{db: db, dir: dir, s: s}
}

// putExecution stores a running execution of pkg's for work.
func (f *fixture) putExecution(t *testing.T, pkg, work string) string {
	t.Helper()
	_, hash := pebblekv.NewToken()
	x := pebblekv.Execution{
		ID: pebblekv.NewExecutionID(), Work: work, Scope: "sc_1", Attempt: 1, Package: pkg,
		Executor: "shell", Epoch: 1, TokenHash: hash, State: pebblekv.ExecRunning, Started: time.Now(),
	}
	if err := f.db.Update(func(tx *pebblekv.Tx) error { return tx.PutExecution(x) }); err != nil {
		t.Fatal(err)
	}
	return x.ID
}

func (f *fixture) listed(t *testing.T, work string) []pebblekv.Artifact {
	t.Helper()
	var out []pebblekv.Artifact
	err := f.db.View(func(r *pebblekv.Reader) (err error) {
		out, err = r.ArtifactsOfWork(work)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := protocol.CodeOf(err); got != code {
		t.Fatalf("error %v has code %q, want %q", err, got, code)
	}
}

// write sends data in chunks of n bytes.
func (f *fixture) write(t *testing.T, pkg, id string, data []byte, n int) {
	t.Helper()
	for off := 0; off < len(data); off += n {
		end := min(off+n, len(data))
		res, err := f.s.Write(context.Background(), pkg, protocol.ArtifactWriteParams{Artifact: id, Offset: int64(off), Data: data[off:end]})
		if err != nil {
			t.Fatalf("write at %d: %v", off, err)
		}
		if res.Size != int64(end) {
			t.Fatalf("write at %d acknowledged size %d, want %d", off, res.Size, end)
		}
	}
}

func TestCommitRoundTripIsListedUnderTheWorkAndReadBack(t *testing.T) {
	f := newFixture(t)
	x := f.putExecution(t, "ext", "w_1")
	data := bytes.Repeat([]byte("0123456789abcdef"), 40000) // 640000 bytes: three chunks
	c, err := f.s.Create("ext", protocol.ArtifactCreateParams{Execution: x, Name: "out.txt", MediaType: "text/plain"})
	if err != nil {
		t.Fatal(err)
	}
	f.write(t, "ext", c.Artifact, data, protocol.MaxChunkBytes)
	if got := f.listed(t, "w_1"); len(got) != 0 {
		t.Fatalf("an open artifact is listed: %+v", got)
	}
	res, err := f.s.Commit("ext", protocol.ArtifactCommitParams{Artifact: c.Artifact, Digest: digestOf(data)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Size != int64(len(data)) || res.Digest != digestOf(data) || res.Artifact != c.Artifact {
		t.Fatalf("commit answered %+v", res)
	}
	blob := filepath.Join(f.dir, "sha256", res.Digest)
	fi, err := os.Stat(blob)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("the content file is %v, want 0600", fi.Mode().Perm())
	}
	for _, d := range []string{f.dir, filepath.Join(f.dir, "sha256"), filepath.Join(f.dir, "tmp")} {
		if di, err := os.Stat(d); err != nil || di.Mode().Perm() != 0o700 {
			t.Errorf("directory %s: %v %v, want 0700", d, di.Mode().Perm(), err)
		}
	}
	got := f.listed(t, "w_1")
	if len(got) != 1 || got[0].ID != c.Artifact || got[0].State != pebblekv.ArtifactCommitted ||
		got[0].Execution != x || got[0].Package != "ext" || got[0].Name != "out.txt" || got[0].MediaType != "text/plain" {
		t.Fatalf("listed %+v", got)
	}
	a, rc, err := f.s.Read(c.Artifact)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	back, _ := io.ReadAll(rc)
	if !bytes.Equal(back, data) || a.Size != int64(len(data)) {
		t.Fatalf("read back %d bytes (record size %d), want %d", len(back), a.Size, len(data))
	}
	// A commit whose answer was lost is retried: the same answer.
	again, err := f.s.Commit("ext", protocol.ArtifactCommitParams{Artifact: c.Artifact})
	if err != nil || again != res {
		t.Fatalf("commit again: %+v %v, want %+v", again, err, res)
	}
	// Written after commit: no longer open.
	_, err = f.s.Write(context.Background(), "ext", protocol.ArtifactWriteParams{Artifact: c.Artifact, Offset: res.Size, Data: []byte("x")})
	wantCode(t, err, protocol.CodeNotFound)
}

func TestWriteAtAnotherOffsetIsConflict(t *testing.T) {
	f := newFixture(t)
	c, err := f.s.Create("ext", protocol.ArtifactCreateParams{Name: "log"})
	if err != nil {
		t.Fatal(err)
	}
	f.write(t, "ext", c.Artifact, []byte("hello "), 6)
	tests := []struct {
		name   string
		offset int64
	}{
		{"the same chunk again", 0},
		{"a gap", 9},
		{"a negative offset", -1},
	}
	// A gap is held for the bytes before it first, for the store's bound.
	f.s.aheadWait = time.Millisecond
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.s.Write(context.Background(), "ext", protocol.ArtifactWriteParams{Artifact: c.Artifact, Offset: tt.offset, Data: []byte("hello ")})
			wantCode(t, err, protocol.CodeConflict)
		})
	}
	// The refusals wrote nothing: the next chunk is still at 6.
	res, err := f.s.Write(context.Background(), "ext", protocol.ArtifactWriteParams{Artifact: c.Artifact, Offset: 6, Data: []byte("world")})
	if err != nil || res.Size != 11 {
		t.Fatalf("the next chunk: %+v %v", res, err)
	}
	done, err := f.s.Commit("ext", protocol.ArtifactCommitParams{Artifact: c.Artifact, Digest: digestOf([]byte("hello world"))})
	if err != nil || done.Size != 11 {
		t.Fatalf("commit: %+v %v", done, err)
	}
}

func TestChunkOverTheBoundIsInvalid(t *testing.T) {
	f := newFixture(t)
	c, err := f.s.Create("ext", protocol.ArtifactCreateParams{Name: "log"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.s.Write(context.Background(), "ext", protocol.ArtifactWriteParams{Artifact: c.Artifact, Data: make([]byte, protocol.MaxChunkBytes+1)})
	wantCode(t, err, protocol.CodeInvalid)
	f.write(t, "ext", c.Artifact, make([]byte, protocol.MaxChunkBytes), protocol.MaxChunkBytes)
}

// TestCommitWithAWrongChecksumChangesNothing: a digest or CRC-32 that does
// not match the bytes received (or a CRC-32 that is not one) is refused,
// nothing is listed or stored, and the writer stays open for the right one.
func TestCommitWithAWrongChecksumChangesNothing(t *testing.T) {
	data := []byte("the bytes")
	crc := protocol.FormatCRC32(crc32.ChecksumIEEE(data))
	tests := []struct {
		name         string
		wrong, right protocol.ArtifactCommitParams
		code         string
	}{
		{"digest of other bytes", protocol.ArtifactCommitParams{Digest: digestOf([]byte("other bytes"))},
			protocol.ArtifactCommitParams{Digest: digestOf(data)}, protocol.CodeConflict},
		{"crc32 of other bytes", protocol.ArtifactCommitParams{CRC32: protocol.FormatCRC32(crc32.ChecksumIEEE([]byte("other bytes")))},
			protocol.ArtifactCommitParams{CRC32: crc}, protocol.CodeConflict},
		{"right crc32, wrong digest", protocol.ArtifactCommitParams{CRC32: crc, Digest: digestOf(nil)},
			protocol.ArtifactCommitParams{CRC32: crc, Digest: digestOf(data)}, protocol.CodeConflict},
		{"crc32 in upper case", protocol.ArtifactCommitParams{CRC32: strings.ToUpper(crc)},
			protocol.ArtifactCommitParams{CRC32: crc}, protocol.CodeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			x := f.putExecution(t, "ext", "w_1")
			c, err := f.s.Create("ext", protocol.ArtifactCreateParams{Execution: x, Name: "out"})
			if err != nil {
				t.Fatal(err)
			}
			f.write(t, "ext", c.Artifact, data, 4)
			tt.wrong.Artifact, tt.right.Artifact = c.Artifact, c.Artifact
			_, err = f.s.Commit("ext", tt.wrong)
			wantCode(t, err, tt.code)
			if got := f.listed(t, "w_1"); len(got) != 0 {
				t.Fatalf("listed after a refused commit: %+v", got)
			}
			if entries, _ := os.ReadDir(filepath.Join(f.dir, "sha256")); len(entries) != 0 {
				t.Fatalf("the content store holds %d files after a refused commit", len(entries))
			}
			_, _, err = f.s.Read(c.Artifact)
			wantCode(t, err, protocol.CodeNotFound)
			// The writer stays open: the right checksum commits.
			res, err := f.s.Commit("ext", tt.right)
			if err != nil {
				t.Fatal(err)
			}
			if res.Digest != digestOf(data) || res.Size != int64(len(data)) {
				t.Fatalf("committed %+v", res)
			}
		})
	}
}

func TestAnotherPackageCannotWriteCommitOrAbort(t *testing.T) {
	f := newFixture(t)
	c, err := f.s.Create("ext", protocol.ArtifactCreateParams{Name: "out"})
	if err != nil {
		t.Fatal(err)
	}
	f.write(t, "ext", c.Artifact, []byte("mine"), 4)
	_, err = f.s.Write(context.Background(), "intruder", protocol.ArtifactWriteParams{Artifact: c.Artifact, Offset: 4, Data: []byte("theirs")})
	wantCode(t, err, protocol.CodeNotFound)
	_, err = f.s.Commit("intruder", protocol.ArtifactCommitParams{Artifact: c.Artifact})
	wantCode(t, err, protocol.CodeNotFound)
	if err := f.s.Abort("intruder", protocol.ArtifactAbortParams{Artifact: c.Artifact}); err != nil {
		t.Fatalf("abort by another package: %v, want nothing done and no error", err)
	}
	res, err := f.s.Commit("ext", protocol.ArtifactCommitParams{Artifact: c.Artifact})
	if err != nil || res.Size != 4 || res.Digest != digestOf([]byte("mine")) {
		t.Fatalf("the owner's commit after the refusals: %+v %v", res, err)
	}
	// Committed, it is still not the intruder's to commit again.
	_, err = f.s.Commit("intruder", protocol.ArtifactCommitParams{Artifact: c.Artifact})
	wantCode(t, err, protocol.CodeNotFound)
}

func TestCreateNamingAnotherPackagesExecutionIsNotFound(t *testing.T) {
	f := newFixture(t)
	theirs := f.putExecution(t, "other", "w_2")
	tests := []struct {
		name, execution string
	}{
		{"another package's execution", theirs},
		{"an unknown execution", "x_unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.s.Create("ext", protocol.ArtifactCreateParams{Execution: tt.execution, Name: "out"})
			wantCode(t, err, protocol.CodeNotFound)
		})
	}
	if _, err := f.s.Create("other", protocol.ArtifactCreateParams{Execution: theirs, Name: "out"}); err != nil {
		t.Fatalf("the owner naming its own execution: %v", err)
	}
}

func TestCreateBadNameIsRefused(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name string
		p    protocol.ArtifactCreateParams
		code string
	}{
		{"no name", protocol.ArtifactCreateParams{}, protocol.CodeInvalid},
		{"two lines", protocol.ArtifactCreateParams{Name: "a\nb"}, protocol.CodeInvalid},
		{"a long name", protocol.ArtifactCreateParams{Name: string(bytes.Repeat([]byte("n"), protocol.MaxArtifactName+1))}, protocol.CodeTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.s.Create("ext", tt.p)
			wantCode(t, err, tt.code)
		})
	}
}

func TestCreateOverTheOpenLimitIsOverloaded(t *testing.T) {
	f := newFixture(t)
	var first string
	for i := range protocol.MaxOpenArtifacts {
		c, err := f.s.Create("ext", protocol.ArtifactCreateParams{Name: "out"})
		if err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
		if first == "" {
			first = c.Artifact
		}
	}
	_, err := f.s.Create("ext", protocol.ArtifactCreateParams{Name: "one too many"})
	wantCode(t, err, protocol.CodeOverloaded)
	// Another package has its own bound.
	if _, err := f.s.Create("other", protocol.ArtifactCreateParams{Name: "out"}); err != nil {
		t.Fatalf("another package's create: %v", err)
	}
	// Aborting one makes room.
	if err := f.s.Abort("ext", protocol.ArtifactAbortParams{Artifact: first}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Create("ext", protocol.ArtifactCreateParams{Name: "out"}); err != nil {
		t.Fatalf("create after an abort: %v", err)
	}
}

func TestAbortRemovesThePartialFileAndRecordsNothing(t *testing.T) {
	f := newFixture(t)
	x := f.putExecution(t, "ext", "w_1")
	c, err := f.s.Create("ext", protocol.ArtifactCreateParams{Execution: x, Name: "out"})
	if err != nil {
		t.Fatal(err)
	}
	f.write(t, "ext", c.Artifact, []byte("partial"), 7)
	if err := f.s.Abort("ext", protocol.ArtifactAbortParams{Artifact: c.Artifact}); err != nil {
		t.Fatal(err)
	}
	if err := f.s.Abort("ext", protocol.ArtifactAbortParams{Artifact: c.Artifact}); err != nil {
		t.Fatalf("abort again: %v, want none", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(f.dir, "tmp")); len(entries) != 0 {
		t.Fatalf("tmp holds %d files after abort", len(entries))
	}
	if got := f.listed(t, "w_1"); len(got) != 0 {
		t.Fatalf("an aborted artifact is listed: %+v", got)
	}
	_, err = f.s.Commit("ext", protocol.ArtifactCommitParams{Artifact: c.Artifact})
	wantCode(t, err, protocol.CodeNotFound)
}

func TestEqualContentsShareOneFile(t *testing.T) {
	f := newFixture(t)
	var ids []string
	for range 2 {
		c, err := f.s.Create("ext", protocol.ArtifactCreateParams{Name: "same"})
		if err != nil {
			t.Fatal(err)
		}
		f.write(t, "ext", c.Artifact, []byte("same bytes"), 10)
		if _, err := f.s.Commit("ext", protocol.ArtifactCommitParams{Artifact: c.Artifact}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, c.Artifact)
	}
	entries, err := os.ReadDir(filepath.Join(f.dir, "sha256"))
	if err != nil || len(entries) != 1 || entries[0].Name() != digestOf([]byte("same bytes")) {
		t.Fatalf("the content store holds %v (%v), want one file named by the digest", entries, err)
	}
	for _, id := range ids {
		_, rc, err := f.s.Read(id)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if string(b) != "same bytes" {
			t.Fatalf("artifact %s reads %q", id, b)
		}
	}
}

func TestOpenRemovesPartialFilesOfAnEarlierRun(t *testing.T) {
	f := newFixture(t)
	c, err := f.s.Create("ext", protocol.ArtifactCreateParams{Name: "out"})
	if err != nil {
		t.Fatal(err)
	}
	f.write(t, "ext", c.Artifact, []byte("left behind"), 11)
	stray := filepath.Join(f.dir, "tmp", "a_stray")
	if err := os.WriteFile(stray, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A new run opens the same directory without closing the old one (a
	// crash).
	s2, err := Open(f.db, f.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if entries, _ := os.ReadDir(filepath.Join(f.dir, "tmp")); len(entries) != 0 {
		t.Fatalf("tmp holds %d files after Open", len(entries))
	}
	_, err = s2.Write(context.Background(), "ext", protocol.ArtifactWriteParams{Artifact: c.Artifact, Offset: 11, Data: []byte("more")})
	wantCode(t, err, protocol.CodeNotFound)
}

func TestClosedStoreIsShuttingDown(t *testing.T) {
	f := newFixture(t)
	c, err := f.s.Create("ext", protocol.ArtifactCreateParams{Name: "out"})
	if err != nil {
		t.Fatal(err)
	}
	f.s.Close()
	_, err = f.s.Create("ext", protocol.ArtifactCreateParams{Name: "out"})
	wantCode(t, err, protocol.CodeShuttingDown)
	_, err = f.s.Write(context.Background(), "ext", protocol.ArtifactWriteParams{Artifact: c.Artifact, Data: []byte("x")})
	wantCode(t, err, protocol.CodeNotFound)
	if entries, _ := os.ReadDir(filepath.Join(f.dir, "tmp")); len(entries) != 0 {
		t.Fatalf("tmp holds %d files after Close", len(entries))
	}
}
