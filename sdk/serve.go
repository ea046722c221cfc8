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
// Main (through Run) calls it; call it yourself only when main does more
// than Main does.
//
// Before it reads anything it takes the protocol off the standard file
// descriptors: the protocol keeps private copies of stdin and stdout, fd 0
// becomes /dev/null and fd 1 becomes stderr, at the OS level. So nothing the
// extension prints (fmt.Println, a log package, a child process, cgo) can
// corrupt the stream, and a child process cannot read the host's messages.
// Log to stderr: the host keeps it in a bounded per-extension log.
//
// The manifest is not checked here: every way a package reaches the daemon
// already checks it. Installing a package, discovering it and `extension
// check` refuse a manifest that breaks a rule, `extension dev` refuses the
// one the built binary prints, sdktest refuses it before a test runs, and
// at every start the host refuses a process whose announced manifest is
// not the installed one. Checking it again cost about 4% of each start.
// Run reports a returned error on stderr.
func Serve(x *Extension) error {
	in, out, err := takeStdio()
	if err != nil {
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
	jsonrpc.Serve(t, protocol.Initialize, s.initialize)
	jsonrpc.Serve(t, protocol.Configure, s.configure)
	jsonrpc.Serve(t, protocol.Shutdown, s.shutdown)
	if len(s.x.operations) > 0 {
		jsonrpc.Serve(t, protocol.OperationCall, s.operationCall)
	}
	if s.x.hasKind(protocol.OperationWait) {
		jsonrpc.Serve(t, protocol.OperationWaitPlan, s.operationWait)
	}
	s.serveEmit(t)
	if s.x.validate != nil || s.typedEntries() {
		jsonrpc.Serve(t, protocol.Validate, s.validate)
	}
	if len(s.x.tasks) > 0 {
		jsonrpc.Serve(t, protocol.TaskRun, s.taskRun)
	}
	if len(s.x.checks) > 0 {
		jsonrpc.Serve(t, protocol.CheckRun, s.checkRun)
	}
	for name, fn := range s.x.methods {
		inTx := false
		if def, ok := protocol.Lookup(name); ok {
			inTx = def.InTransaction
		}
		t.HandleRaw(name, func(ctx context.Context, params jsontext.Value) (any, error) {
			if inTx {
				ctx = context.WithValue(ctx, inTxKey{}, true)
			}
			return fn(ctx, &Request{Host: s.host, Method: name}, params)
		})
	}
	return t
}

// typedEntries reports whether any entry type's config is typed, so the
// SDK answers validate for it.
func (s *server) typedEntries() bool {
	for _, e := range s.x.entries {
		if e.check != nil {
			return true
		}
	}
	return false
}

func (s *server) initialize(_ context.Context, p protocol.InitializeParams) (protocol.InitializeResult, error) {
	v, err := protocol.Negotiate(s.x.Manifest.Protocol, p.ProtocolVersions)
	if err != nil {
		return protocol.InitializeResult{}, err
	}
	s.host.initialized(p)
	s.initialized.Store(true)
	return protocol.InitializeResult{ProtocolVersion: v, Manifest: *s.x.Manifest}, nil
}

func (s *server) configure(ctx context.Context, p protocol.ConfigureParams) (protocol.ConfigureResult, error) {
	r := &Request{Host: s.host, Method: protocol.MethodConfigure}
	if p.KV.Stored < p.KV.Declared && s.x.migrate != nil {
		if err := s.x.migrate(ctx, r, p.KV.Stored, p.KV.Declared); err != nil {
			return protocol.ConfigureResult{}, fmt.Errorf("migrating KV from layout %d to %d: %w", p.KV.Stored, p.KV.Declared, err)
		}
	}
	if s.x.configure == nil {
		return protocol.ConfigureResult{}, nil
	}
	return s.x.configure(ctx, r, p)
}

// validate decodes a typed entry's config strictly (EntryConfig) and then
// asks the extension's own Validate, if any.
func (s *server) validate(ctx context.Context, p protocol.ValidateParams) (protocol.ValidateResult, error) {
	if e, ok := s.x.entries[p.Type]; ok && e.check != nil && p.Kind == protocol.ValidateExtension {
		if err := e.check(p.Config); err != nil {
			return protocol.ValidateResult{}, entryError(p.Type, p.Name, err)
		}
	}
	if s.x.validate == nil {
		return protocol.ValidateResult{}, nil
	}
	return s.x.validate(ctx, &Request{Host: s.host, Method: protocol.MethodValidate}, p)
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
	if !ok || op.kind != protocol.OperationHandler || op.answer == nil {
		return protocol.OperationCallResult{}, protocol.Errorf(protocol.ErrUndeclared, "handler operation %q is not declared by %s", p.Operation, s.x.Manifest.Name)
	}
	r := &Request{Host: s.host, Authority: p.Authority, RequestID: p.RequestID,
		Method: protocol.MethodOperationCall, Name: p.Operation}
	return op.answer(ctx, r, p.Input, op.outputSchema)
}

func (s *server) taskRun(ctx context.Context, p protocol.TaskRunParams) (protocol.TaskRunResult, error) {
	fn, ok := s.x.tasks[p.Task]
	if !ok {
		return protocol.TaskRunResult{}, protocol.Errorf(protocol.ErrUndeclared, "task %q is not declared by %s", p.Task, s.x.Manifest.Name)
	}
	return protocol.TaskRunResult{}, fn(ctx, &Request{Host: s.host, Method: protocol.MethodTaskRun, Name: p.Task})
}

func (s *server) checkRun(ctx context.Context, p protocol.CheckRunParams) (protocol.CheckRunResult, error) {
	fn, ok := s.x.checks[p.Check]
	if !ok {
		return protocol.CheckRunResult{}, protocol.Errorf(protocol.ErrUndeclared, "check %q is not declared by %s", p.Check, s.x.Manifest.Name)
	}
	detail, err := fn(ctx, &Request{Host: s.host, Method: protocol.MethodCheckRun, Name: p.Check, Config: p.Config}, p.Deep)
	if err != nil {
		return protocol.CheckRunResult{Status: protocol.CheckFail, Code: protocol.CodeOf(err), Detail: err.Error()}, nil
	}
	return protocol.CheckRunResult{OK: true, Status: protocol.CheckOK, Detail: detail}, nil
}
