package sdk_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
)

// orderedArtifact is a test host's one artifact: chunks land in offset
// order, one ahead waiting for those before it, as a host that announces
// an artifact window must do.
type orderedArtifact struct {
	mu    sync.Mutex
	order protocol.ChunkOrder
	data  []byte
	// hold, when set, is called (unlocked) with each chunk's offset before
	// it lands; an error refuses the chunk.
	hold func(offset int64) error
}

func newOrderedArtifact(hold func(int64) error) *orderedArtifact {
	return &orderedArtifact{hold: hold}
}

func (a *orderedArtifact) table() *jsonrpc.Table {
	t := jsonrpc.NewTable()
	jsonrpc.Handle(t, protocol.MethodArtifactCreate, func(context.Context, protocol.ArtifactCreateParams) (protocol.ArtifactCreateResult, error) {
		return protocol.ArtifactCreateResult{Artifact: "a1"}, nil
	})
	jsonrpc.Handle(t, protocol.MethodArtifactWrite, func(ctx context.Context, p protocol.ArtifactWriteParams) (protocol.ArtifactWriteResult, error) {
		if a.hold != nil {
			if err := a.hold(p.Offset); err != nil {
				return protocol.ArtifactWriteResult{}, err
			}
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		ahead := func() bool { return p.Offset > int64(len(a.data)) }
		if err := a.order.Await(ctx, &a.mu, p, time.Minute, ahead); err != nil {
			return protocol.ArtifactWriteResult{}, err
		}
		if p.Offset != int64(len(a.data)) {
			return protocol.ArtifactWriteResult{}, protocol.Errorf(protocol.ErrConflict, "chunk at %d, have %d", p.Offset, len(a.data))
		}
		a.data = append(a.data, p.Data...)
		a.order.Moved()
		return protocol.ArtifactWriteResult{Size: int64(len(a.data))}, nil
	})
	jsonrpc.Handle(t, protocol.MethodArtifactCommit, func(_ context.Context, p protocol.ArtifactCommitParams) (protocol.ArtifactCommitResult, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		if p.CRC32 == "" {
			return protocol.ArtifactCommitResult{}, protocol.Errorf(protocol.ErrInvalid, "the commit carries no crc32")
		}
		sum := sha256.Sum256(a.data)
		digest := hex.EncodeToString(sum[:])
		if err := protocol.CheckArtifactCommit(p, int64(len(a.data)), digest, crc32.ChecksumIEEE(a.data)); err != nil {
			return protocol.ArtifactCommitResult{}, err
		}
		return protocol.ArtifactCommitResult{Artifact: "a1", Size: int64(len(a.data)), Digest: digest}, nil
	})
	return t
}

// uploadThrough serves an extension that writes chunks (each from one
// buffer it overwrites after every Write) and commits, over pipes to a
// host serving a, which announces window; it returns the operation's error.
func uploadThrough(t *testing.T, a *orderedArtifact, window int, chunks ...[]byte) error {
	t.Helper()
	x := sdk.New("up").Operation("up.run", sdk.Handler(func(ctx context.Context, r *sdk.Request, _ struct{}) (struct{}, error) {
		w, err := r.Host.Artifact(ctx, sdk.ArtifactCreateParams{Name: "out"})
		if err != nil {
			return struct{}{}, err
		}
		buf := make([]byte, 0, protocol.MaxChunkBytes)
		for _, c := range chunks {
			buf = append(buf[:0], c...)
			if _, err := w.Write(buf); err != nil {
				return struct{}{}, err
			}
			clear(buf[:cap(buf)])
		}
		_, err = w.Commit()
		return struct{}{}, err
	}))
	hostR, extW, _ := os.Pipe()
	extR, hostW, _ := os.Pipe()
	go sdk.ServeStreams(context.Background(), x, extR, extW, nil)
	conn := jsonrpc.New(hostR, hostW, jsonrpc.Options{Handlers: a.table()})
	t.Cleanup(func() { hostW.Close(); conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := conn.Call(ctx, protocol.MethodInitialize, protocol.InitializeParams{ProtocolVersions: protocol.Versions, ArtifactWindow: window}, nil); err != nil {
		t.Fatal(err)
	}
	return conn.Call(ctx, protocol.MethodOperationCall, protocol.OperationCallParams{Operation: "up.run", Input: protocol.Payload{Data: jsontext.Value(`{}`)}}, nil)
}

// chunkOf is one full chunk of c.
func chunkOf(c byte) []byte { return bytes.Repeat([]byte{c}, protocol.MaxChunkBytes) }

// TestArtifactChunkGoesOutWhileTheOneBeforeIsAnswered: with the host's
// window at two, the second chunk arrives while the host still holds the
// first; with no window announced it does not.
func TestArtifactChunkGoesOutWhileTheOneBeforeIsAnswered(t *testing.T) {
	for _, tt := range []struct {
		name    string
		window  int
		holdFor time.Duration
		want    bool
	}{
		// Generous: the second chunk may be slow to come on a loaded machine.
		{"window of two", 2, time.Minute, true},
		// Short: nothing is expected to come.
		{"no window", 0, 300 * time.Millisecond, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			second := make(chan struct{})
			var once sync.Once
			var overlapped bool
			a := newOrderedArtifact(func(offset int64) error {
				switch offset {
				case 0:
					select {
					case <-second:
						overlapped = true
					case <-time.After(tt.holdFor):
					}
				case protocol.MaxChunkBytes:
					once.Do(func() { close(second) })
				}
				return nil
			})
			if err := uploadThrough(t, a, tt.window, chunkOf('a'), chunkOf('b'), chunkOf('c')); err != nil {
				t.Fatal(err)
			}
			if overlapped != tt.want {
				t.Fatalf("the second chunk arrived while the first was held: %v, want %v", overlapped, tt.want)
			}
			if want := bytes.Join([][]byte{chunkOf('a'), chunkOf('b'), chunkOf('c')}, nil); !bytes.Equal(a.data, want) {
				t.Fatalf("the host holds %d bytes, not the three chunks in order", len(a.data))
			}
		})
	}
}

// TestArtifactChunkRefusedReentrantIsSentAgainFromItsOwnCopy: a chunk left
// in flight when Write returned, refused reentrant_call, goes out again
// with the bytes it was written with, though the caller has overwritten
// its buffer since; the commit's CRC-32 agrees with the host's bytes.
func TestArtifactChunkRefusedReentrantIsSentAgainFromItsOwnCopy(t *testing.T) {
	var mu sync.Mutex
	refused := false
	a := newOrderedArtifact(func(offset int64) error {
		mu.Lock()
		defer mu.Unlock()
		if offset == 0 && !refused {
			refused = true
			return protocol.Errorf(protocol.ErrReentrantCall, "an in-transaction call is outstanding")
		}
		return nil
	})
	if err := uploadThrough(t, a, 2, chunkOf('a'), chunkOf('b')); err != nil {
		t.Fatal(err)
	}
	if !refused {
		t.Fatal("the first chunk was never refused")
	}
	if want := append(chunkOf('a'), chunkOf('b')...); !bytes.Equal(a.data, want) {
		t.Fatal("the host holds other bytes than the two chunks written")
	}
}

// TestArtifactChunkRefusedFailsTheUpload: a refused chunk is the upload's
// error, with or without a window. With one, the refusal of the chunk in
// flight is the next Write's error (or Commit's), promptly, although the
// chunk sent after it waits at the host for bytes that never come: it is
// cancelled.
func TestArtifactChunkRefusedFailsTheUpload(t *testing.T) {
	for _, window := range []int{0, 2} {
		t.Run(fmt.Sprintf("window %d", window), func(t *testing.T) {
			a := newOrderedArtifact(func(offset int64) error {
				if offset == 0 {
					return protocol.Errorf(protocol.ErrTooLarge, "no room")
				}
				return nil
			})
			done := make(chan error, 1)
			go func() { done <- uploadThrough(t, a, window, chunkOf('a'), chunkOf('b'), chunkOf('c')) }()
			select {
			case err := <-done:
				if protocol.CodeOf(err) != protocol.CodeTooLarge {
					t.Fatalf("the upload ended with %v, want the refusal's too_large", err)
				}
			case <-time.After(time.Minute):
				t.Fatal("the upload did not end after its first chunk was refused")
			}
			a.mu.Lock()
			held := len(a.data)
			a.mu.Unlock()
			if held != 0 {
				t.Fatalf("the host holds %d bytes after the first chunk was refused", held)
			}
		})
	}
}
