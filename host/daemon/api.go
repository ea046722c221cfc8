package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/session"
)

// serveAPI listens on the state directory's socket, owner-only.
func (d *Daemon) serveAPI() error {
	path := d.opts.Dirs.Socket()
	// The lock proves no other daemon owns this state directory, so a socket
	// left here is a crashed daemon's.
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", d.apiStatus)
	mux.HandleFunc("GET /v1/extensions", d.apiExtensions)
	mux.HandleFunc("POST /v1/extensions/{name}/call", d.apiCall)
	mux.HandleFunc("GET /v1/events", d.apiEvents)
	mux.HandleFunc("GET /v1/work", d.apiRecords("work"))
	mux.HandleFunc("GET /v1/waits", d.apiRecords("wait"))
	mux.HandleFunc("GET /v1/logs/{name}", d.apiLogs)
	mux.HandleFunc("GET /v1/doctor", d.apiDoctor)
	mux.HandleFunc("POST /v1/config/validate", d.apiValidate)
	mux.HandleFunc("POST /v1/config/apply", d.apiApply)
	d.listener = ln
	d.server = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := d.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.logger.Error("management API stopped", "err", err)
		}
	}()
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"code":"internal","message":"encoding the answer failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, status int, code, format string, args ...any) {
	writeJSON(w, status, client.Error{Code: code, Message: fmt.Sprintf(format, args...)})
}

func (d *Daemon) apiStatus(w http.ResponseWriter, _ *http.Request) {
	g := d.gen.Load()
	writeJSON(w, http.StatusOK, client.Status{
		Version: d.opts.Version, PID: os.Getpid(), Started: d.started, State: d.opts.Dirs.State,
		Config: d.configSource(), Generation: g.ID, Hash: g.Hash,
	})
}

// ExtensionViews describes every package for the operator.
func (d *Daemon) ExtensionViews() client.Extensions {
	var out client.Extensions
	for _, x := range d.extensions() {
		m := x.pkg.Manifest
		v := client.Extension{
			Name: m.Name, Version: m.Version, Title: m.Title, Source: string(x.pkg.Source),
			HostRun: x.pkg.HostRun, Replaces: x.pkg.Replaces, Dir: x.pkg.Dir,
			Permissions: m.Permissions, Log: d.opts.Dirs.ExtensionLog(m.Name),
		}
		d.mu.Lock()
		s, startErr := x.session, x.startErr
		d.mu.Unlock()
		switch {
		case s != nil:
			st := s.Status()
			v.State, v.PID, v.Protocol, v.Restarts = string(st.State), st.PID, st.Protocol, st.Restarts
			v.LastError, v.GrantedEnv, v.MissingEnv = st.LastError, st.GrantedEnv, st.MissingEnv
		case startErr != nil:
			v.State, v.LastError = string(session.StateRefused), startErr.Error()
			if protocol.CodeOf(startErr) != protocol.CodeKVDowngrade && protocol.CodeOf(startErr) != protocol.CodeManifestMismatch &&
				protocol.CodeOf(startErr) != protocol.CodeUnsupportedProtocolVersion {
				v.State = "failed"
			}
		default:
			v.State = string(session.StateStarting)
		}
		if x.svc != nil {
			v.Refused = x.svc.Refused()
		}
		for _, t := range m.Provides.Tasks {
			ct := client.Task{Name: t.Name, Every: t.IntervalSeconds}
			if st, ok := x.tasks[t.Name]; ok {
				st.mu.Lock()
				ct.Runs, ct.LastRun, ct.LastErr = st.runs, st.lastRun, st.lastErr
				st.mu.Unlock()
			}
			v.Tasks = append(v.Tasks, ct)
		}
		out.Extensions = append(out.Extensions, v)
	}
	for _, p := range d.discovery {
		out.Skipped = append(out.Skipped, client.Skipped{Dir: p.Dir, Name: p.Name, Code: p.Code, Message: p.Message})
	}
	return out
}

func (d *Daemon) apiExtensions(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, d.ExtensionViews())
}

// apiCall lets the operator call a package's handler operation directly:
// the caller is "operator", the scope the one named.
func (d *Daemon) apiCall(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	d.mu.Lock()
	x, ok := d.exts[name]
	d.mu.Unlock()
	if !ok || x.session == nil {
		writeError(w, http.StatusNotFound, protocol.CodeNotFound, "no running extension is named %q; open-conduit extension list shows them", name)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, protocol.CodeInvalid, "reading the request: %v", err)
		return
	}
	var req client.CallRequest
	if err := json.Unmarshal(body, &req, json.RejectUnknownMembers(true)); err != nil {
		writeError(w, http.StatusBadRequest, protocol.CodeInvalid, "the request is not a call: %v", err)
		return
	}
	if op, ok := x.pkg.Manifest.Operation(req.Operation); !ok || op.Kind != protocol.OperationHandler {
		writeError(w, http.StatusNotFound, protocol.CodeUndeclared, "%s declares no handler operation %q", name, req.Operation)
		return
	}
	input, _ := json.Marshal(req.Input)
	if req.Input == nil {
		input = []byte("{}")
	}
	if req.RequestID == "" {
		req.RequestID = fmt.Sprintf("operator-%d", time.Now().UnixNano())
	}
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	var res protocol.OperationCallResult
	err = x.session.Call(ctx, protocol.MethodOperationCall, protocol.OperationCallParams{
		Operation: req.Operation, Input: protocol.Payload{Data: input},
		Authority: protocol.Authority{Scope: req.Scope, Caller: "operator"}, RequestID: req.RequestID,
	}, &res)
	if err != nil {
		code := protocol.CodeOf(err)
		if code == "" {
			code = protocol.CodeInternal
		}
		writeJSON(w, http.StatusOK, client.CallResult{Code: code, Message: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, client.CallResult{Output: res.Output})
}

func (d *Daemon) apiEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	after, err1 := parseUint(q.Get("after"))
	limit, err2 := parseUint(q.Get("limit"))
	if err1 != nil || err2 != nil {
		writeError(w, http.StatusBadRequest, protocol.CodeInvalid, "after and limit are non-negative integers")
		return
	}
	scope := q.Get("scope")
	var res client.Events
	err := d.db.View(func(rd *pebblekv.Reader) error {
		var es []pebblekv.Event
		var err error
		if scope != "" {
			es, err = rd.ScopeEvents([]string{scope}, after, int(limit))
		} else {
			es, err = rd.Events(after, int(limit))
		}
		if err != nil {
			return err
		}
		res.Events = make([]protocol.Event, len(es))
		for i, e := range es {
			res.Events[i] = e.Wire()
		}
		if len(es) > 0 {
			res.Next = es[len(es)-1].Seq
		}
		res.Latest, err = rd.LatestSequence()
		return err
	})
	if err != nil {
		writeError(w, http.StatusInternalServerError, protocol.CodeInternal, "reading the log: %v", err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func parseUint(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	return strconv.ParseUint(s, 10, 64)
}

func (d *Daemon) apiRecords(kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		res := client.Records{Items: []client.Record{}}
		err := d.db.View(func(r *pebblekv.Reader) error {
			return r.ListRecords(kind, "", func(id string, raw []byte) error {
				var m map[string]any
				if err := json.Unmarshal(raw, &m); err != nil {
					return err
				}
				res.Items = append(res.Items, client.Record{ID: id, Record: m})
				return nil
			})
		})
		if err != nil {
			writeError(w, http.StatusInternalServerError, protocol.CodeInternal, "reading %s records: %v", kind, err)
			return
		}
		writeJSON(w, http.StatusOK, res)
	}
}

func (d *Daemon) apiLogs(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	d.mu.Lock()
	_, ok := d.exts[name]
	d.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, protocol.CodeNotFound, "no extension is named %q; open-conduit extension list shows them", name)
		return
	}
	tail, err := parseUint(r.URL.Query().Get("tail"))
	if err != nil || tail == 0 {
		tail = 100
	}
	path := d.opts.Dirs.ExtensionLog(name)
	lines, err := tailFile(path, int(tail))
	if err != nil && !os.IsNotExist(err) {
		writeError(w, http.StatusInternalServerError, protocol.CodeInternal, "reading %s: %v", path, err)
		return
	}
	writeJSON(w, http.StatusOK, client.Log{Extension: name, Path: path, Lines: lines})
}

// tailFile returns the last n lines of a (bounded, at most 1 MiB) log.
func tailFile(path string, n int) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return []string{}, err
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return []string{}, nil
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines, nil
}

func (d *Daemon) apiDoctor(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, d.Doctor(r.Context()))
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	data, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, protocol.CodeInvalid, "reading the request: %v", err)
		return nil, false
	}
	if !jsontext.Value(data).IsValid() {
		writeError(w, http.StatusBadRequest, protocol.CodeInvalid, "the body is not a JSON config")
		return nil, false
	}
	return data, true
}

func (d *Daemon) apiValidate(w http.ResponseWriter, r *http.Request) {
	data, ok := readBody(w, r)
	if !ok {
		return
	}
	ps := d.Validate(r.Context(), data)
	writeJSON(w, http.StatusOK, client.Validation{OK: len(ps.Errors()) == 0, Problems: problems(ps)})
}

func (d *Daemon) apiApply(w http.ResponseWriter, r *http.Request) {
	data, ok := readBody(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	res, err := d.Apply(ctx, data)
	if err != nil {
		writeError(w, http.StatusInternalServerError, protocol.CodeInternal, "applying: %v", err)
		return
	}
	out := client.Applied{Applied: res.Applied, Generation: res.Generation, Hash: res.Hash, Problems: problems(res.Problems)}
	out.Refused = res.Refused
	// A refused config is an answer, not a failure of the API: applied is
	// false and the problems say why.
	writeJSON(w, http.StatusOK, out)
}

func problems(ps config.Problems) []client.Problem {
	out := make([]client.Problem, len(ps))
	for i, p := range ps {
		out[i] = client.Problem{Path: p.Path, Code: p.Code, Severity: p.Severity, Message: p.Message}
	}
	return out
}
