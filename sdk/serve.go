package sdk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
)

// Serve serves x over the process's stdin and stdout until stdin closes.
//
// Before it reads anything it takes the protocol off the standard file
// descriptors: the protocol keeps private copies of stdin and stdout, fd 0
// becomes /dev/null and fd 1 becomes stderr, at the OS level. So nothing the
// extension prints (fmt.Println, a log package, a child process, cgo) can
// corrupt the stream, and a child process cannot read the host's messages.
// Log to stderr: the host keeps it in a bounded per-extension log.
//
// An invalid manifest is reported and refused before serving: it is a
// mistake in the extension's code, and the host would refuse it anyway.
func Serve(x *Extension) error {
	if err := x.Manifest.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: invalid manifest:\n%v\n", x.Manifest.Name, err)
		return err
	}
	in, out, err := takeStdio()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", x.Manifest.Name, err)
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	return ServeStreams(context.Background(), x, in, out, logger)
}

// ServeStreams serves x over r and w until r reaches EOF or ctx ends. Tests
// and harnesses use it to serve an extension over pipes of their own.
func ServeStreams(ctx context.Context, x *Extension, r io.Reader, w io.Writer, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &server{x: x, logger: logger}
	s.host = newHost(x.Manifest.Name)
	s.conn = jsonrpc.New(r, w, jsonrpc.Options{
		Peer:     "host",
		Handlers: s.table(),
		Gate:     s.gate,
		Logger:   logger,
	})
	s.host.setConn(s.conn)
	defer s.conn.Close()
	select {
	case <-s.conn.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := s.conn.Err(); err != nil && !errors.Is(err, protocol.ErrTransport) {
		return err
	}
	return nil
}

// server is one serving of an Extension.
type server struct {
	x      *Extension
	conn   *jsonrpc.Conn
	host   *Host
	logger *slog.Logger

	initialized atomic.Bool
	shutting    atomic.Bool
}

// gate refuses everything before initialize and after shutdown.
func (s *server) gate(_ context.Context, method string) error {
	if s.shutting.Load() {
		return protocol.Errorf(protocol.ErrShuttingDown, "%s: the extension is shutting down", method)
	}
	if method != protocol.MethodInitialize && !s.initialized.Load() {
		return protocol.Errorf(protocol.ErrNotInitialized, "%s: initialize first", method)
	}
	return nil
}

// table registers every method the extension serves: the lifecycle, then
// each registered surface.
func (s *server) table() *jsonrpc.Table {
	t := jsonrpc.NewTable()
	handle(s, t, protocol.Initialize, s.initialize)
	handle(s, t, protocol.Configure, s.configure)
	handle(s, t, protocol.Shutdown, s.shutdown)
	if len(s.x.operations) > 0 {
		handle(s, t, protocol.OperationCall, s.operationCall)
	}
	if s.x.Validate != nil {
		handle(s, t, protocol.Validate, s.x.Validate)
	}
	if len(s.x.tasks) > 0 {
		handle(s, t, protocol.TaskRun, s.taskRun)
	}
	if len(s.x.checks) > 0 {
		handle(s, t, protocol.CheckRun, s.checkRun)
	}
	for name, fn := range s.x.methods {
		t.HandleRaw(name, func(ctx context.Context, params jsontext.Value) (any, error) {
			return fn(withHost(ctx, s.host), s.host, params)
		})
	}
	return t
}

// handle registers a method through its descriptor, with a handler that
// finds the Host in its context.
func handle[P, R any](s *server, t *jsonrpc.Table, d protocol.Desc[P, R], fn func(context.Context, P) (R, error)) {
	jsonrpc.Serve(t, d, func(ctx context.Context, p P) (R, error) {
		return fn(withHost(ctx, s.host), p)
	})
}

func (s *server) initialize(_ context.Context, p protocol.InitializeParams) (protocol.InitializeResult, error) {
	v, err := protocol.Negotiate(s.x.Manifest.Protocol, p.ProtocolVersions)
	if err != nil {
		return protocol.InitializeResult{}, err
	}
	s.host.setStateDir(p.StateDir)
	s.initialized.Store(true)
	return protocol.InitializeResult{ProtocolVersion: v, Manifest: *s.x.Manifest}, nil
}

func (s *server) configure(ctx context.Context, p protocol.ConfigureParams) (protocol.ConfigureResult, error) {
	if p.KV.Stored < p.KV.Declared && s.x.Migrate != nil {
		if err := s.x.Migrate(ctx, s.host, p.KV.Stored, p.KV.Declared); err != nil {
			return protocol.ConfigureResult{}, fmt.Errorf("migrating KV from layout %d to %d: %w", p.KV.Stored, p.KV.Declared, err)
		}
	}
	if s.x.Configure == nil {
		return protocol.ConfigureResult{}, nil
	}
	return s.x.Configure(ctx, s.host, p)
}

// shutdownWait bounds how long shutdown waits for in-flight requests.
const shutdownWait = 5 * time.Second

func (s *server) shutdown(ctx context.Context, _ protocol.ShutdownParams) (protocol.ShutdownResult, error) {
	s.shutting.Store(true)
	conn := jsonrpc.FromContext(ctx)
	deadline := time.Now().Add(shutdownWait)
	for conn.Inflight() > 1 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	return protocol.ShutdownResult{}, nil
}

func (s *server) operationCall(ctx context.Context, p protocol.OperationCallParams) (protocol.OperationCallResult, error) {
	op, ok := s.x.operations[p.Operation]
	if !ok {
		return protocol.OperationCallResult{}, protocol.Errorf(protocol.ErrUndeclared, "operation %q is not declared by %s", p.Operation, s.x.Manifest.Name)
	}
	ctx = withRequestID(ctx, p.RequestID)
	out, err := op.call(ctx, p.Authority, p.Input)
	if err != nil {
		return protocol.OperationCallResult{}, err
	}
	return encodeOutput(op.outputSchema, out)
}

func (s *server) taskRun(ctx context.Context, p protocol.TaskRunParams) (protocol.TaskRunResult, error) {
	fn, ok := s.x.tasks[p.Task]
	if !ok {
		return protocol.TaskRunResult{}, protocol.Errorf(protocol.ErrUndeclared, "task %q is not declared by %s", p.Task, s.x.Manifest.Name)
	}
	return protocol.TaskRunResult{}, fn(ctx, s.host)
}

func (s *server) checkRun(ctx context.Context, p protocol.CheckRunParams) (protocol.CheckRunResult, error) {
	fn, ok := s.x.checks[p.Check]
	if !ok {
		return protocol.CheckRunResult{}, protocol.Errorf(protocol.ErrUndeclared, "check %q is not declared by %s", p.Check, s.x.Manifest.Name)
	}
	detail, err := fn(ctx, s.host, p.Deep)
	if err != nil {
		return protocol.CheckRunResult{Status: protocol.CheckFail, Code: protocol.CodeOf(err), Detail: err.Error()}, nil
	}
	return protocol.CheckRunResult{OK: true, Status: protocol.CheckOK, Detail: detail}, nil
}

type requestIDKey struct{}

func withRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// CallRequestID returns the request ID of the operation call ctx serves: the
// idempotency key a retry carries too. A handler whose effect is not
// naturally idempotent derives its intent identity from it.
func CallRequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// PackageCommand answers the packaging subcommands a package's binary
// serves: package-manifest prints the manifest, package-certification the
// certification fixture (or {} when there is none). It reports whether args
// named one, so main returns instead of serving.
func PackageCommand(args []string, m *protocol.Manifest, certification []byte, w io.Writer) bool {
	if len(args) == 0 {
		return false
	}
	switch args[0] {
	case "package-manifest":
		b, err := m.MarshalIndent()
		if err != nil {
			fmt.Fprintf(os.Stderr, "encoding manifest: %v\n", err)
			os.Exit(1)
		}
		_, _ = w.Write(b)
		return true
	case "package-certification":
		if len(certification) == 0 {
			certification = []byte("{}")
		}
		var v jsontext.Value = append([]byte(nil), certification...)
		if err := v.Indent(jsontext.WithIndent("  ")); err != nil {
			fmt.Fprintf(os.Stderr, "certification fixture is not JSON: %v\n", err)
			os.Exit(1)
		}
		_, _ = w.Write(append(v, '\n'))
		return true
	}
	return false
}
