// Command goplugin-ext is the workload's extension on hashicorp/go-plugin
// over gRPC: the same operations as ours-ext, with host callbacks over the
// GRPCBroker, as a go-plugin author would write them.
package main

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/open-conduit/open-conduit/bench/transport/gp"
	"github.com/open-conduit/open-conduit/bench/transport/workload"
)

// ext serves the workload; it dials the host's service over the broker on
// first use.
type ext struct {
	broker *plugin.GRPCBroker
	once   sync.Once
	host   *grpc.ClientConn
	err    error
}

// request carries the broker id of the host's service beside the workload.
type request struct {
	Broker uint32          `json:"broker"`
	Body   json.RawMessage `json:"body"`
}

func (e *ext) dial(id uint32) (*grpc.ClientConn, error) {
	e.once.Do(func() { e.host, e.err = e.broker.Dial(id) })
	return e.host, e.err
}

func (e *ext) Echo(_ context.Context, in *gp.Bytes) (*gp.Bytes, error) {
	var m workload.Echo
	if err := json.Unmarshal(in.Value, &m); err != nil {
		return nil, err
	}
	return &gp.Bytes{Value: workload.MustJSON(m)}, nil
}

func (e *ext) Callbacks(ctx context.Context, in *gp.Bytes) (*gp.Bytes, error) {
	var r request
	var c workload.Callbacks
	if err := json.Unmarshal(in.Value, &r); err != nil {
		return nil, err
	}
	_ = json.Unmarshal(r.Body, &c)
	host, err := e.dial(r.Broker)
	if err != nil {
		return nil, err
	}
	out := workload.CallbackTimes{Nanos: make([]int64, 0, c.N)}
	key := workload.MustJSON(map[string]string{"namespace": "bench", "key": "k"})
	for i := 0; i < c.N; i++ {
		t := time.Now()
		if _, err := gp.Invoke(ctx, host, "bench.Host", "Get", key); err != nil {
			return nil, err
		}
		out.Nanos = append(out.Nanos, time.Since(t).Nanoseconds())
	}
	return &gp.Bytes{Value: workload.MustJSON(out)}, nil
}

func (e *ext) Upload(ctx context.Context, in *gp.Bytes) (*gp.Bytes, error) {
	var r request
	var u workload.Upload
	if err := json.Unmarshal(in.Value, &r); err != nil {
		return nil, err
	}
	_ = json.Unmarshal(r.Body, &u)
	host, err := e.dial(r.Broker)
	if err != nil {
		return nil, err
	}
	data := workload.Pattern(u.Bytes)
	chunks := 0
	for off := 0; off < len(data); off += u.Chunk {
		// Raw bytes: a protobuf BytesValue needs no base64.
		if _, err := gp.Invoke(ctx, host, "bench.Host", "Write", data[off:min(off+u.Chunk, len(data))]); err != nil {
			return nil, err
		}
		chunks++
	}
	return &gp.Bytes{Value: workload.MustJSON(workload.Uploaded{Size: int64(len(data)), Chunks: chunks})}, nil
}

func (e *ext) Wait(ctx context.Context, in *gp.Bytes) (*gp.Bytes, error) {
	var r request
	var w workload.Wait
	if err := json.Unmarshal(in.Value, &r); err != nil {
		return nil, err
	}
	_ = json.Unmarshal(r.Body, &w)
	host, err := e.dial(r.Broker)
	if err != nil {
		return nil, err
	}
	// The cancel may come while this is answered: it must not end it.
	if _, err := gp.Invoke(context.WithoutCancel(ctx), host, "bench.Host", "Record", workload.MustJSON(map[string]any{"key": w.Key + ".started", "ns": time.Now().UnixNano()})); err != nil {
		return nil, err
	}
	<-ctx.Done()
	seen := time.Now().UnixNano()
	_, err = gp.Invoke(context.Background(), host, "bench.Host", "Record", workload.MustJSON(map[string]any{"key": w.Key, "ns": seen}))
	return &gp.Bytes{}, err
}

func (e *ext) Crash(_ context.Context, in *gp.Bytes) (*gp.Bytes, error) {
	var c workload.Crash
	_ = json.Unmarshal(in.Value, &c)
	workload.WriteNow(c.File)
	os.Exit(3)
	return nil, nil
}

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: gp.Handshake,
		Plugins: map[string]plugin.Plugin{
			"bench": &gp.Plugin{NewExt: func(b *plugin.GRPCBroker) gp.ExtServer { return &ext{broker: b} }},
		},
		GRPCServer: plugin.DefaultGRPCServer,
	})
}
