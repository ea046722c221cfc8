package artifacts

import (
	"context"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
)

// startAhead creates an artifact and sends its second chunk ("world", at
// offset 6) before the first, and waits until the store holds it.
func startAhead(t *testing.T, f *fixture, ctx context.Context) (id string, done <-chan error) {
	t.Helper()
	c, err := f.s.Create("ext", protocol.ArtifactCreateParams{Name: "out.txt"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := f.s.writerOf("ext", c.Artifact, protocol.MethodArtifactWrite)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 1)
	go func() {
		_, err := f.s.Write(ctx, "ext", protocol.ArtifactWriteParams{Artifact: c.Artifact, Offset: 6, Data: []byte("world")})
		errs <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		w.mu.Lock()
		waiting := w.order.Waiting()
		w.mu.Unlock()
		if waiting == 1 {
			return c.Artifact, errs
		}
		select {
		case err := <-errs:
			t.Fatalf("the chunk ahead was answered without waiting: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the chunk ahead never waited")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestWriteAheadLandsAfterTheChunkBefore(t *testing.T) {
	f := newFixture(t)
	f.s.aheadWait = time.Minute
	id, done := startAhead(t, f, context.Background())
	res, err := f.s.Write(context.Background(), "ext", protocol.ArtifactWriteParams{Artifact: id, Data: []byte("hello ")})
	if err != nil || res.Size != 6 {
		t.Fatalf("the first chunk: %+v %v", res, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the chunk ahead: %v", err)
	}
	got, err := f.s.Commit("ext", protocol.ArtifactCommitParams{Artifact: id, Digest: digestOf([]byte("hello world"))})
	if err != nil || got.Size != 11 {
		t.Fatalf("commit: %+v %v", got, err)
	}
}

func TestWriteAheadIsRefusedAfterTheBound(t *testing.T) {
	f := newFixture(t)
	f.s.aheadWait = 20 * time.Millisecond
	c, err := f.s.Create("ext", protocol.ArtifactCreateParams{Name: "out.txt"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.s.Write(context.Background(), "ext", protocol.ArtifactWriteParams{Artifact: c.Artifact, Offset: 6, Data: []byte("world")})
	wantCode(t, err, protocol.CodeConflict)
	// It wrote nothing: the artifact still takes its first chunk.
	f.write(t, "ext", c.Artifact, []byte("hello world"), 6)
}

func TestWriteAheadEndsWhenItsCallIsCancelled(t *testing.T) {
	f := newFixture(t)
	f.s.aheadWait = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	id, done := startAhead(t, f, ctx)
	cancel()
	wantCode(t, <-done, protocol.CodeCancelled)
	f.write(t, "ext", id, []byte("hello world"), 6)
}

func TestWriteAheadEndsWhenTheArtifactIsAborted(t *testing.T) {
	f := newFixture(t)
	f.s.aheadWait = time.Minute
	id, done := startAhead(t, f, context.Background())
	if err := f.s.Abort("ext", protocol.ArtifactAbortParams{Artifact: id}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, <-done, protocol.CodeNotFound)
}
