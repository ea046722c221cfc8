package sdk_test

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
)

// TestHostCallsRefusedReentrantAreRetriedOutsideInTransactionHandlers: a
// host with an in-transaction call outstanding refuses every callback
// reentrant_call. An operation's KV read made meanwhile is sent again once
// the host stops refusing, and answers; a recurrence.next handler's own
// read (the in-transaction handler: the mistake the refusal reports) is
// refused once and never retried.
func TestHostCallsRefusedReentrantAreRetriedOutsideInTransactionHandlers(t *testing.T) {
	var nextErr error
	x := sdk.New("retry").
		Operation("retry.read", sdk.Handler(func(ctx context.Context, r *sdk.Request, _ struct{}) (string, error) {
			v, err := r.Host.Get(ctx, "retry", "k")
			return string(v.Value), err
		})).
		Recurrence("retry.tick", func(ctx context.Context, r *sdk.Request, p sdk.RecurrenceNextParams) (sdk.RecurrenceNextResult, error) {
			_, nextErr = r.Host.Get(ctx, "retry", "k")
			return sdk.RecurrenceNextResult{Next: p.After.Add(time.Minute)}, nil
		})

	var inTx atomic.Bool
	var refused, served atomic.Int32
	table := jsonrpc.NewTable().HandleRaw(protocol.MethodKVGet, func(context.Context, jsontext.Value) (any, error) {
		served.Add(1)
		return protocol.KVGetResult{Found: true, Value: []byte("v"), Version: "1"}, nil
	})
	gate := func(_ context.Context, method string) error {
		if !inTx.Load() {
			return nil
		}
		if refused.Add(1) == 2 {
			inTx.Store(false) // the in-transaction call answered meanwhile
		}
		return protocol.Errorf(protocol.ErrReentrantCall, "%s: an in-transaction call is outstanding", method)
	}
	hostR, extW, _ := os.Pipe()
	extR, hostW, _ := os.Pipe()
	go sdk.ServeStreams(context.Background(), x, extR, extW, nil)
	conn := jsonrpc.New(hostR, hostW, jsonrpc.Options{Handlers: table, Gate: gate})
	t.Cleanup(func() { hostW.Close(); conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := conn.Call(ctx, protocol.MethodInitialize, protocol.InitializeParams{ProtocolVersions: protocol.Versions}, nil); err != nil {
		t.Fatal(err)
	}

	inTx.Store(true)
	var out protocol.OperationCallResult
	if err := conn.Call(ctx, protocol.MethodOperationCall, protocol.OperationCallParams{Operation: "retry.read", Input: protocol.Payload{Data: jsontext.Value(`{}`)}}, &out); err != nil {
		t.Fatalf("the operation whose read was refused twice: %v", err)
	}
	if refused.Load() != 2 || served.Load() != 1 {
		t.Errorf("refused %d, served %d; want the read refused twice, then served once", refused.Load(), served.Load())
	}

	refused.Store(-100) // refuse for good now
	inTx.Store(true)
	var res protocol.RecurrenceNextResult
	if err := conn.Call(ctx, protocol.MethodRecurrenceNext, protocol.RecurrenceNextParams{Kind: "retry.tick", After: time.Now()}, &res); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(nextErr, protocol.ErrReentrantCall) || refused.Load() != -99 {
		t.Errorf("recurrence.next's own read: %v after %d refusals; want reentrant_call after one, unretried", nextErr, refused.Load()+100)
	}
}
