package protocol

import (
	"context"
	"sync"
	"time"
)

// ChunkOrder is how a host that announces an artifact window applies one
// artifact's chunks in offset order: its connection may serve the next
// chunk, on another goroutine, while the one before it is still being
// stored, and that chunk waits here until the bytes before it land. The
// daemon's store, the SDK's in-memory host and the benchmark hosts share
// it, so they hold a chunk ahead alike. The zero value is ready; the lock
// of the artifact it belongs to guards it.
type ChunkOrder struct {
	// moved is closed when a chunk lands or the artifact ends, and made
	// anew by the next waiter; nil while no one waits.
	moved chan struct{}
	// waiting counts the chunks waiting.
	waiting int
}

// Await holds the chunk p while ahead reports that the bytes before it
// have not landed (and the artifact is still open), with mu, the
// artifact's lock, held on entry and on return and let go while it waits.
// It returns nil once ahead reports false or after bound, when the caller
// refuses the chunk at the wrong offset as any other; ErrCancelled when
// ctx ends first.
func (o *ChunkOrder) Await(ctx context.Context, mu sync.Locker, p ArtifactWriteParams, bound time.Duration, ahead func() bool) error {
	if !ahead() {
		return nil
	}
	timer := time.NewTimer(bound)
	defer timer.Stop()
	o.waiting++
	defer func() { o.waiting-- }()
	for ahead() {
		if o.moved == nil {
			o.moved = make(chan struct{})
		}
		moved := o.moved
		mu.Unlock()
		select {
		case <-moved:
		case <-timer.C:
			mu.Lock()
			return nil
		case <-ctx.Done():
			mu.Lock()
			return Errorf(ErrCancelled, "artifact.write: artifact %s: the chunk at offset %d was cancelled while it waited for the bytes before it", p.Artifact, p.Offset)
		}
		mu.Lock()
	}
	return nil
}

// Moved wakes every chunk waiting: a chunk landed or the artifact ended
// (the artifact's lock held).
func (o *ChunkOrder) Moved() {
	if o.moved != nil {
		close(o.moved)
		o.moved = nil
	}
}

// Waiting is how many chunks wait (the artifact's lock held).
func (o *ChunkOrder) Waiting() int { return o.waiting }
