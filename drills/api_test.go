package drills

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/fixtures/probe"
	"github.com/open-conduit/open-conduit/internal/daemontest"
	"github.com/open-conduit/open-conduit/protocol"
)

// apiRaw sends one request to the daemon's socket as any HTTP client
// would, and returns the status, the headers and the error shape (when
// the answer is not 2xx).
func apiRaw(t *testing.T, e *daemontest.Env, method, path string, body []byte) (int, http.Header, client.Error) {
	t.Helper()
	hc := &http.Client{Timeout: daemontest.Deadline, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", client.SocketPath(e.State))
		},
	}}
	req, err := http.NewRequest(method, "http://oc"+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var e2 client.Error
	if resp.StatusCode/100 != 2 {
		if err := json.Unmarshal(data, &e2); err != nil || e2.Code == "" {
			t.Errorf("%s %s: a %d answer that is not the API's error shape: %q", method, path, resp.StatusCode, data)
		}
	}
	return resp.StatusCode, resp.Header, e2
}

// TestDrillAPIAnswersEveryErrorAsJSON asks the real daemon what its router
// and its bounds refuse: a path it does not serve, a method a path does
// not take, a body over 16 MiB, a body that is not JSON. Each answer is
// the API's JSON error shape with its status.
func TestDrillAPIAnswersEveryErrorAsJSON(t *testing.T) {
	e := daemontest.New(t, bins)
	e.Start()
	huge := append(bytes.Repeat([]byte(" "), protocol.MaxMessageBytes), "{}"...)
	for _, tc := range []struct {
		method, path string
		body         []byte
		status       int
		code         string
	}{
		{"GET", "/v1/nothing", nil, http.StatusNotFound, protocol.CodeNotFound},
		{"GET", "/", nil, http.StatusNotFound, protocol.CodeNotFound},
		{"DELETE", "/v1/status", nil, http.StatusMethodNotAllowed, protocol.CodeMethodNotFound},
		{"GET", "/v1/config/apply", nil, http.StatusMethodNotAllowed, protocol.CodeMethodNotFound},
		{"POST", "/v1/config/validate", huge, http.StatusRequestEntityTooLarge, protocol.CodeTooLarge},
		{"POST", "/v1/config/apply", []byte("{"), http.StatusBadRequest, protocol.CodeInvalid},
		{"POST", "/v1/extensions/nobody/restart", []byte("{}"), http.StatusNotFound, protocol.CodeNotFound},
	} {
		status, h, got := apiRaw(t, e, tc.method, tc.path, tc.body)
		if status != tc.status || got.Code != tc.code || got.Message == "" || h.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: %d %q %+v; want %d %s as JSON", tc.method, tc.path, status, h.Get("Content-Type"), got, tc.status, tc.code)
		}
	}
	// Negative control: a good request is answered 200, as JSON.
	if status, h, _ := apiRaw(t, e, "GET", "/v1/status", nil); status != http.StatusOK || h.Get("Content-Type") != "application/json" {
		t.Errorf("status: %d %v", status, h)
	}
}

// TestDrillConfigThatIsNotAnObjectChangesNothing sends null (and the
// other JSON values that are not objects) as a config: validate says it is
// not a config, apply applies nothing (the generation, the file and the
// scopes stay), and config check refuses the file, each at "/".
func TestDrillConfigThatIsNotAnObjectChangesNothing(t *testing.T) {
	e := daemontest.New(t, bins)
	e.Start()
	ctx := context.Background()
	before := e.Status()
	for _, text := range []string{"null", " null\n", "[]", `"scopes"`, "0"} {
		v, err := e.C.ValidateConfig(ctx, []byte(text))
		if err != nil || v.OK || !apiProblemAtRoot(v.Problems) {
			t.Errorf("validate %q: %+v %v", text, v, err)
		}
		a, err := e.C.ApplyConfig(ctx, []byte(text))
		if err != nil || a.Applied || a.Unchanged || !apiProblemAtRoot(a.Problems) {
			t.Errorf("apply %q: %+v %v", text, a, err)
		}
		file := filepath.Join(t.TempDir(), "config.json")
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bins.OpenConduit, "config", "check", "--config", file).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "error /:") {
			t.Errorf("config check of %q: %v\n%s", text, err, out)
		}
	}
	after := e.Status()
	if after.Generation != before.Generation || after.Hash != before.Hash {
		t.Errorf("the generation changed: %d %s → %d %s", before.Generation, before.Hash, after.Generation, after.Hash)
	}
	if data, err := os.ReadFile(e.Config); err != nil || string(data) != daemontest.Config {
		t.Errorf("the config file changed: %v\n%s", err, data)
	}
	view, err := e.C.Config(ctx)
	if err != nil || view.Text != daemontest.Config {
		t.Errorf("the live config changed: %v\n%s", err, view.Text)
	}
	// Negative control: an object is a config, applied.
	if a, err := e.C.ApplyConfig(ctx, []byte(daemontest.HelloOnly)); err != nil || !a.Applied {
		t.Fatalf("an object: %+v %v", a, err)
	}
}

func apiProblemAtRoot(ps []client.Problem) bool {
	return len(ps) == 1 && ps[0].Path == "/" && ps[0].Severity == "error" && strings.Contains(ps[0].Message, "wants an object")
}

// TestDrillAPISurvivesTrickledBodiesAndIdleFloods runs the daemon with 256
// descriptors in all, trickles a request body a byte at a time, then
// opens hundreds of kept-alive connections and holds them. The daemon
// ends the trickle (408, the API's error shape), keeps answering, and
// restarts a package killed meanwhile.
func TestDrillAPISurvivesTrickledBodiesAndIdleFloods(t *testing.T) {
	e := daemontest.New(t, bins)
	e.Bins.OpenConduit = apiDescriptorLimited(t, 256)
	e.Start()

	// A trickled body: ended by the daemon, while status still answers.
	trickle, err := net.Dial("unix", client.SocketPath(e.State))
	if err != nil {
		t.Fatal(err)
	}
	defer trickle.Close()
	fmt.Fprintf(trickle, "POST /v1/config/validate HTTP/1.1\r\nHost: oc\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
	stop := make(chan struct{})
	defer close(stop)
	go apiTrickle(trickle, stop)
	if st := e.Status(); st.Phase != client.PhaseRunning {
		t.Fatalf("status during the trickle: %+v", st)
	}
	_ = trickle.SetReadDeadline(time.Now().Add(daemontest.Deadline))
	resp, err := http.ReadResponse(bufio.NewReader(trickle), nil)
	if err != nil {
		t.Fatalf("the daemon did not end the trickled request: %v", err)
	}
	var te client.Error
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || json.Unmarshal(data, &te) != nil || te.Code != protocol.CodeBadRequest {
		t.Errorf("the trickled request's answer: %d %s", resp.StatusCode, data)
	}

	// A flood of kept-alive connections, held open by the drill.
	n := scale(400, 1000)
	flood := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range flood {
			c.Close()
		}
	}()
	for range n {
		c, err := net.Dial("unix", client.SocketPath(e.State))
		if err != nil {
			t.Fatalf("connection %d: %v", len(flood), err)
		}
		fmt.Fprintf(c, "GET /v1/status HTTP/1.1\r\nHost: oc\r\n\r\n")
		flood = append(flood, c)
	}
	tries := 0
	e.Eventually("status answering a new connection during the flood", func() bool {
		tries++
		return apiFreshStatus(e.State) == http.StatusOK
	})
	was := e.Extension(probe.Name).PID
	if err := syscall.Kill(was, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	e.Eventually("the killed package restarted during the flood", func() bool {
		exts, err := e.C.Extensions(context.Background())
		if err != nil {
			return false
		}
		for _, x := range exts.Extensions {
			if x.Name == probe.Name {
				return x.State == "running" && x.PID != was && x.PID != 0
			}
		}
		return false
	})
	report(t, "256 descriptors: a trickled body answered %d; %d kept-alive connections held open; status answered a new connection after %d tries; a killed package restarted", resp.StatusCode, n, tries)
}

// apiFreshStatus asks for the status on a connection of its own (a
// client's kept-alive one would not show whether the daemon still takes
// new ones), and returns the answer's HTTP status, 0 for none.
func apiFreshStatus(state string) int {
	c, err := net.Dial("unix", client.SocketPath(state))
	if err != nil {
		return 0
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET /v1/status HTTP/1.1\r\nHost: oc\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// apiTrickle writes one byte of body every 100 ms until stop, or until the
// daemon closes the connection.
func apiTrickle(c net.Conn, stop <-chan struct{}) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			if _, err := c.Write([]byte(" ")); err != nil {
				return
			}
		}
	}
}

// apiDescriptorLimited is an executable that runs open-conduit with at
// most limit open descriptors (soft and hard).
func apiDescriptorLimited(t *testing.T, limit int) string {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skipf("lowering the daemon's descriptor limit needs sh: %v", err)
	}
	if out, err := exec.Command(sh, "-c", fmt.Sprintf("ulimit -n %d", limit)).CombinedOutput(); err != nil {
		t.Skipf("lowering the descriptor limit needs sh's ulimit -n: %v %s", err, out)
	}
	path := filepath.Join(t.TempDir(), "open-conduit-limited")
	script := fmt.Sprintf("#!%s\nulimit -n %d || exit 97\nexec %q \"$@\"\n", sh, limit, bins.OpenConduit)
	if err := os.WriteFile(path, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDrillHungValidateIsBoundedPerPackage freezes hello (SIGSTOP: its
// process lives, and answers nothing) and applies two configs in turn: one
// that hello must validate is refused at hello's entry, naming hello, and
// one that only needs hello configured is applied, hello refused for not
// answering; neither waits for the client's timeout. They go one after the
// other because the daemon applies one config at a time: sent at once, the
// second could win the race, and hello, already refused for configure,
// would then be named for that rather than for validate. Once hello runs
// again, the first config applies.
func TestDrillHungValidateIsBoundedPerPackage(t *testing.T) {
	e := daemontest.New(t, bins)
	e.Start()
	hello := e.Extension("hello").PID
	if err := syscall.Kill(hello, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(hello, syscall.SIGCONT)
	withHello := strings.Replace(daemontest.Config, `{"name": "h1", "type": "hello"}`, `{"name": "h1", "type": "hello", "config": {"greeting": "hi"}}`, 1)
	withoutHello := `{"scopes": [{"id": "alpha", "entries": [{"name": "p1", "type": "probe"}]}]}`
	type result struct {
		a   client.Applied
		err error
	}
	apply := func(text string) result {
		a, err := e.C.ApplyConfig(context.Background(), []byte(text))
		return result{a, err}
	}
	r := apply(withHello)
	if r.err != nil || r.a.Applied || len(r.a.Problems) != 1 {
		t.Fatalf("the config hello must validate: %+v %v", r.a, r.err)
	}
	if p := r.a.Problems[0]; p.Path != "/scopes/1/entries/0/config" || p.Code != protocol.CodeExtensionUnavailable ||
		!strings.Contains(p.Message, "hello did not answer validate within") || strings.Contains(p.Message, "probe") {
		t.Errorf("the problem: %+v", p)
	}
	r = apply(withoutHello)
	if r.err != nil || !r.a.Applied || len(r.a.Refused) != 1 || r.a.Refused[0].Extension != "hello" || !strings.Contains(r.a.Refused[0].Message, "did not answer configure") {
		t.Fatalf("the config that needs hello only configured: %+v %v", r.a, r.err)
	}
	// Negative control: hello running again, the first config applies.
	if err := syscall.Kill(hello, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if a, err := e.C.ApplyConfig(context.Background(), []byte(withHello)); err != nil || !a.Applied || len(a.Problems) != 0 || len(a.Refused) != 0 {
		t.Fatalf("with hello answering again: %+v %v", a, err)
	}
}

// apiRaceBinary is open-conduit built with the race detector when this
// test binary has it (make test runs go test -race, so the packages are
// already built that way and this is quick), else the plain binary.
func apiRaceBinary(t *testing.T) (string, bool) {
	t.Helper()
	info, ok := debug.ReadBuildInfo()
	race := false
	for _, s := range info.Settings {
		race = race || (ok && s.Key == "-race" && s.Value == "true")
	}
	if !race {
		return bins.OpenConduit, false
	}
	out := filepath.Join(t.TempDir(), "open-conduit-race")
	cmd := exec.Command("go", "build", "-race", "-o", out, "github.com/open-conduit/open-conduit")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -race: %v\n%s", err, msg)
	}
	return out, true
}

// TestDrillStressUnderRace runs applies, doctor, status, the extension
// list, logs (tail and follow), events (pages and long polls), calls and
// restarts at once against the real daemon, built with the race detector
// when the suite runs under it. Every answer must be an answer, and the
// daemon must report no data race and stop cleanly.
func TestDrillStressUnderRace(t *testing.T) {
	e := daemontest.New(t, bins)
	bin, race := apiRaceBinary(t)
	e.Bins.OpenConduit = bin
	e.Launch("", []string{"GORACE=halt_on_error=1"}, "--config", e.Config)
	e.Eventually("the daemon running its configuration", func() bool {
		st, err := e.C.Status(context.Background())
		return err == nil && st.PID == e.Cmd.Process.Pid && st.Phase == client.PhaseRunning
	})
	rounds := scale(6, 60)
	configs := []string{daemontest.Config, strings.Replace(daemontest.Config, `"scopes": [`, `"scopes": [
    {"id": "gamma", "entries": [{"name": "p2", "type": "probe"}]},`, 1)}
	ctx := context.Background()
	var (
		counts = map[string]*atomic.Int64{}
		errs   = make(chan error, 1000)
		done   = make(chan struct{})
		wg     sync.WaitGroup
	)
	fail := func(what string, err error) {
		select {
		case errs <- fmt.Errorf("%s: %w", what, err):
		default:
		}
	}
	loop := func(name string, op func() error) {
		n := &atomic.Int64{}
		counts[name] = n
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if err := op(); err != nil {
					fail(name, err)
				}
				n.Add(1)
			}
		}()
	}
	var after atomic.Uint64
	loop("doctor", func() error { _, err := e.C.Doctor(ctx); return err })
	loop("status", func() error {
		if _, err := e.C.Status(ctx); err != nil {
			return err
		}
		_, err := e.C.Extensions(ctx)
		return err
	})
	loop("logs", func() error {
		l, err := e.C.Logs(ctx, "hello", 20)
		if err != nil {
			return err
		}
		_, err = e.C.LogsAfter(ctx, probe.Name, l.Offset, time.Second)
		return err
	})
	loop("events", func() error {
		page, err := e.C.Events(ctx, client.EventsQuery{After: after.Load(), Limit: 50, Wait: time.Second})
		if err == nil && page.Next > 0 {
			after.Store(page.Next)
		}
		return err
	})
	loop("calls", func() error {
		// hello restarts meanwhile: a call then finds it not running, or
		// loses it mid-call, and says so.
		res, err := e.C.Call(ctx, "hello", client.CallRequest{Operation: "hello.greet", Scope: "beta", Input: map[string]any{"name": "ada"}})
		var ce *client.Error
		switch {
		case errors.As(err, &ce) && ce.Code == protocol.CodeUnavailable:
			return nil
		case err == nil && !apiRestartCode(res.Code):
			return fmt.Errorf("hello.greet refused %s: %s", res.Code, res.Message)
		}
		return err
	})
	for i := range rounds {
		a, err := e.C.ApplyConfig(ctx, []byte(configs[(i+1)%2]))
		if err != nil || !a.Applied {
			fail("apply", fmt.Errorf("%+v %v", a, err))
		}
		if i%2 == 0 {
			if _, err := e.C.Restart(ctx, "hello", daemontest.Deadline); err != nil {
				fail("restart", err)
			}
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if strings.Contains(e.Log.String(), "DATA RACE") {
		t.Errorf("the daemon reported a data race:\n%s", e.Log)
	}
	e.Stop()
	report(t, "race detector in the daemon: %v; %d applies and %d restarts beside %d doctor, %d status, %d logs, %d events and %d call rounds",
		race, rounds, (rounds+1)/2, counts["doctor"].Load(), counts["status"].Load(), counts["logs"].Load(), counts["events"].Load(), counts["calls"].Load())
}

// apiRestartCode reports a call's code that a restart under way explains.
func apiRestartCode(code string) bool {
	switch code {
	case "", protocol.CodeTransport, protocol.CodeShuttingDown, protocol.CodeUnavailable, protocol.CodeNotInitialized:
		return true
	}
	return false
}
