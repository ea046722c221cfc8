package sdk_test

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

// writer is an extension whose operation writes one value of the given
// size through a Batch.
func writer() *sdk.Extension {
	type in struct {
		Key   string `json:"key"`
		Bytes int    `json:"bytes"`
	}
	return sdk.New("notes").
		Operation("notes.write", sdk.Handler(func(ctx context.Context, r *sdk.Request, p in) (struct{}, error) {
			_, err := r.Host.Commit(ctx, sdk.NewBatch().Put("notes", p.Key, bytes.Repeat([]byte{'x'}, p.Bytes)))
			return struct{}{}, err
		}))
}

// TestCommitRefusesOversizedValueBeforeSending: a value whose base64 alone
// is over the line bound is refused too_large by the SDK, naming the value
// bound, before anything is sent; the connection stays up, and a value at
// the bound is written.
func TestCommitRefusesOversizedValueBeforeSending(t *testing.T) {
	h := sdktest.New(t, writer())
	ctx := context.Background()
	write := func(key string, n int) error {
		_, err := sdktest.Call[struct{}](ctx, h, "notes.write", map[string]any{"key": key, "bytes": n})
		return err
	}
	cases := []struct {
		name  string
		bytes int
		want  *protocol.Error
	}{
		{"12.5 MiB, over the line bound in base64", 12_500 << 10, protocol.ErrTooLarge},
		{"one byte over the value bound", protocol.MaxValueBytes + 1, protocol.ErrTooLarge},
		{"at the value bound", protocol.MaxValueBytes, nil},
	}
	for i, tc := range cases {
		key := "k" + strconv.Itoa(i)
		err := write(key, tc.bytes)
		if tc.want == nil {
			if err != nil || len(h.Host().KV("notes")[key]) != tc.bytes {
				t.Errorf("%s: %v, want it written", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), strconv.Itoa(protocol.MaxValueBytes)) {
			t.Errorf("%s: %v, want %s naming the %d-byte bound", tc.name, err, tc.want.Code, protocol.MaxValueBytes)
		}
	}
	if n := len(h.Host().Commits()); n != 1 {
		t.Fatalf("the host received %d batches, want only the one at the bound", n)
	}
}
