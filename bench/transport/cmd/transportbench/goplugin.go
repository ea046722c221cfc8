package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/open-conduit/open-conduit/bench/transport/gp"
	"github.com/open-conduit/open-conduit/bench/transport/workload"
)

// pluginRunner runs the workload over hashicorp/go-plugin with gRPC.
type pluginRunner struct {
	bins binaries
	work string
	cfg  config
}

func (r *pluginRunner) name() string { return "goplugin" }

// pluginHost serves the extension's callbacks over the broker.
type pluginHost struct {
	mu      sync.Mutex
	written int64
	stamps  *stamps
}

func (h *pluginHost) Get(context.Context, *gp.Bytes) (*gp.Bytes, error) { return &gp.Bytes{}, nil }

func (h *pluginHost) Write(_ context.Context, in *gp.Bytes) (*gp.Bytes, error) {
	h.mu.Lock()
	h.written += int64(len(in.Value))
	h.mu.Unlock()
	return &gp.Bytes{}, nil
}

func (h *pluginHost) Record(_ context.Context, in *gp.Bytes) (*gp.Bytes, error) {
	var rec struct {
		Key string `json:"key"`
		NS  int64  `json:"ns"`
	}
	if err := json.Unmarshal(in.Value, &rec); err != nil {
		return nil, err
	}
	h.stamps.put(rec.Key, rec.NS)
	return &gp.Bytes{}, nil
}

// started is one running plugin with the broker id of the host's service.
type started struct {
	client *plugin.Client
	ext    *gp.Client
	broker uint32
}

func (r *pluginRunner) start(bin string, host *pluginHost, version uint) (*started, error) {
	hs := gp.Handshake
	hs.ProtocolVersion = version
	// Its socket goes in the run's directory: TMPDIR is set to it for the
	// whole run (main).
	cmd := exec.Command(bin)
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  hs,
		Plugins:          map[string]plugin.Plugin{"bench": &gp.Plugin{}},
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Off}),
	})
	rpc, err := client.Client()
	if err != nil {
		client.Kill()
		return nil, err
	}
	raw, err := rpc.Dispense("bench")
	if err != nil {
		client.Kill()
		return nil, err
	}
	ext := raw.(*gp.Client)
	id := ext.Broker.NextId()
	go ext.Broker.AcceptAndServe(id, func(opts []grpc.ServerOption) *grpc.Server {
		s := grpc.NewServer(opts...)
		s.RegisterService(&gp.HostDesc, host)
		return s
	})
	return &started{client: client, ext: ext, broker: id}, nil
}

func (s *started) call(ctx context.Context, method string, body any) ([]byte, error) {
	return s.ext.Call(ctx, method, workload.MustJSON(body))
}

// callBroker sends body with the broker id the extension dials back on.
func (s *started) callBroker(ctx context.Context, method string, body any) ([]byte, error) {
	return s.ext.Call(ctx, method, workload.MustJSON(map[string]any{"broker": s.broker, "body": body}))
}

// coldWarm times a cold start (a fresh copy of the binary, to its first
// answered call) and a warm restart (the same binary again), and returns
// the restarted plugin and the binary.
func (r *pluginRunner) coldWarm(f figures, host *pluginHost) (*started, string, error) {
	ctx := context.Background()
	echo := workload.Echo{Text: workload.EchoText}
	fresh, err := freshCopy(r.bins.plugin, r.work)
	if err != nil {
		return nil, "", err
	}
	t := time.Now()
	s, err := r.start(fresh, host, 1)
	if err != nil {
		return nil, fresh, err
	}
	if _, err := s.call(ctx, "Echo", echo); err != nil {
		s.client.Kill()
		return nil, fresh, err
	}
	f.add("cold_start_ms", ms(time.Since(t)))
	s.client.Kill()

	t = time.Now()
	if s, err = r.start(fresh, host, 1); err != nil {
		return nil, fresh, err
	}
	if _, err := s.call(ctx, "Echo", echo); err != nil {
		s.client.Kill()
		return nil, fresh, err
	}
	f.add("warm_restart_ms", ms(time.Since(t)))
	return s, fresh, nil
}

func (r *pluginRunner) starts(f figures) error {
	s, _, err := r.coldWarm(f, &pluginHost{stamps: newStamps()})
	if err != nil {
		return err
	}
	s.client.Kill()
	return nil
}

func (r *pluginRunner) round(f figures) error {
	ctx := context.Background()
	host := &pluginHost{stamps: newStamps()}
	echo := workload.Echo{Text: workload.EchoText}

	s, fresh, err := r.coldWarm(f, host)
	if err != nil {
		return err
	}

	t := time.Now()
	if bad, err := r.start(fresh, host, 99); err == nil {
		bad.client.Kill()
		return fmt.Errorf("go-plugin accepted a version mismatch")
	}
	f.add("version_refusal_ms", ms(time.Since(t)))

	doEcho := func() error {
		out, err := s.call(ctx, "Echo", echo)
		var got workload.Echo
		if err == nil && (json.Unmarshal(out, &got) != nil || got.Text != echo.Text) {
			err = fmt.Errorf("answered %q", out)
		}
		return err
	}
	if err := sequential(f, r.cfg.echoes, doEcho); err != nil {
		return err
	}
	if err := concurrent(f, r.cfg.concurrent, r.cfg.perWorker, doEcho); err != nil {
		return err
	}

	out, err := s.callBroker(ctx, "Callbacks", workload.Callbacks{N: r.cfg.callbacks})
	if err != nil {
		return fmt.Errorf("callbacks: %w", err)
	}
	var cb workload.CallbackTimes
	if err := json.Unmarshal(out, &cb); err != nil {
		return err
	}
	f.add("callback_p50_us", nanosP50(cb.Nanos))

	for _, chunk := range artifactChunks {
		host.mu.Lock()
		host.written = 0
		host.mu.Unlock()
		t := time.Now()
		if _, err := s.callBroker(ctx, "Upload", workload.Upload{Bytes: r.cfg.artifact, Chunk: chunk.size}); err != nil {
			return fmt.Errorf("upload: %w", err)
		}
		f.add(chunk.key, float64(r.cfg.artifact)/(1<<20)/time.Since(t).Seconds())
		host.mu.Lock()
		if host.written != int64(r.cfg.artifact) {
			host.mu.Unlock()
			return fmt.Errorf("upload: host got %d bytes", host.written)
		}
		host.mu.Unlock()
	}

	err = cancelSeen(f, r.cfg.cancels, func(ctx context.Context, key string) error {
		_, err := s.callBroker(ctx, "Wait", workload.Wait{Key: key})
		return err
	}, host.stamps.seen)
	if err != nil {
		return err
	}

	s.client.Kill()
	for i := 0; i < r.cfg.crashes; i++ {
		if s, err = r.start(fresh, host, 1); err != nil {
			return err
		}
		if _, err := s.call(ctx, "Echo", echo); err != nil {
			return err
		}
		file := filepath.Join(r.work, fmt.Sprintf("crash-plugin-%d", time.Now().UnixNano()))
		_, err := s.call(ctx, "Crash", workload.Crash{File: file})
		detected := time.Now()
		if err == nil {
			return fmt.Errorf("crash: no error")
		}
		died, err := workload.ReadTime(file)
		if err != nil {
			return err
		}
		f.add("crash_detected_ms", ms(detected.Sub(died)))
		s.client.Kill()
	}
	return nil
}
