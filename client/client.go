package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	json "github.com/go-json-experiment/json"
)

// SocketName is the management socket's name in the state directory.
const SocketName = "open-conduit.sock"

// ErrNoDaemon is returned when no daemon answers on the socket.
var ErrNoDaemon = errors.New("no daemon")

// ErrUntrustedSocket is returned, before anything is sent, when the socket
// is not one the operator's daemon made: not a socket, or owned by another
// user than the client's own or root. Another user who could create the
// state directory first could otherwise answer in the daemon's place.
var ErrUntrustedSocket = errors.New("untrusted socket")

// MaxWait is the longest a long poll (events, logs) or a restart's wait
// holds an answer: the daemon caps what a client asks at it, so an answer
// always comes well inside the client's own request timeout.
const MaxWait = 30 * time.Second

// Client talks to one daemon.
type Client struct {
	socket string
	http   *http.Client
}

// New returns a client for the daemon whose state directory is stateDir
// (resolve it with StateDir).
func New(stateDir string) *Client {
	socket := SocketPath(stateDir)
	return &Client{
		socket: socket,
		http: &http.Client{
			Timeout: 60 * time.Second,
			Transport: &http.Transport{
				DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
					if err := checkSocket(socket); err != nil {
						return nil, err
					}
					var d net.Dialer
					return d.DialContext(ctx, "unix", socket)
				},
				// Below the daemon's idle timeout, so the client, not the
				// daemon, closes an idle connection, and a request never
				// goes out on one the daemon is closing.
				IdleConnTimeout: 30 * time.Second,
			},
		},
	}
}

// Socket is the socket the client dials.
func (c *Client) Socket() string { return c.socket }

func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://open-conduit"+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return c.dialError(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var e Error
		if json.Unmarshal(data, &e) == nil && e.Message != "" {
			return &e
		}
		return fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// dialError says what a failed request means: no daemon, or a socket the
// client does not trust.
func (c *Client) dialError(err error) error {
	if errors.Is(err, ErrUntrustedSocket) {
		return errors.Unwrap(err)
	}
	var ne *net.OpError
	if errors.As(err, &ne) || errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w answers at %s: start one with 'open-conduit serve --state %s'", ErrNoDaemon, c.socket, filepath.Dir(c.socket))
	}
	return err
}

// Status reports the daemon's status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var s Status
	return s, c.do(ctx, http.MethodGet, "/v1/status", nil, &s)
}

// Extensions lists the packages and what discovery skipped.
func (c *Client) Extensions(ctx context.Context) (Extensions, error) {
	var e Extensions
	return e, c.do(ctx, http.MethodGet, "/v1/extensions", nil, &e)
}

// EventsQuery pages the log.
type EventsQuery struct {
	// After is the cursor: Events with a greater sequence.
	After uint64
	// Limit bounds the page (the daemon caps it at 1000).
	Limit int
	// Scope keeps only one scope's Events.
	Scope string
	// Wait, when positive, makes an empty page wait up to this long for
	// the next Event (a long poll, for following the log).
	Wait time.Duration
}

// Events reads one page of the event log.
func (c *Client) Events(ctx context.Context, q EventsQuery) (Events, error) {
	v := url.Values{}
	if q.After > 0 {
		v.Set("after", strconv.FormatUint(q.After, 10))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Scope != "" {
		v.Set("scope", q.Scope)
	}
	if q.Wait > 0 {
		v.Set("wait", waitParam(q.Wait))
	}
	var e Events
	return e, c.do(ctx, http.MethodGet, "/v1/events?"+v.Encode(), nil, &e)
}

// Logs reads the last lines of an extension's stderr log.
func (c *Client) Logs(ctx context.Context, extension string, tail int) (Log, error) {
	var l Log
	path := "/v1/logs/" + url.PathEscape(extension) + "?tail=" + strconv.Itoa(tail)
	return l, c.do(ctx, http.MethodGet, path, nil, &l)
}

// LogsAfter reads what an extension's log gained after offset (a Log's
// Offset), waiting up to wait for it to grow; Reset says it started over.
func (c *Client) LogsAfter(ctx context.Context, extension string, offset int64, wait time.Duration) (Log, error) {
	var l Log
	v := url.Values{}
	v.Set("from", strconv.FormatInt(offset, 10))
	if wait > 0 {
		v.Set("wait", waitParam(wait))
	}
	return l, c.do(ctx, http.MethodGet, "/v1/logs/"+url.PathEscape(extension)+"?"+v.Encode(), nil, &l)
}

// waitParam renders a long poll's wait in whole seconds, at least one.
func waitParam(d time.Duration) string {
	return strconv.Itoa(max(1, int(d/time.Second)))
}

// Restart restarts one package: its process is stopped and started again,
// nothing else is. The answer waits up to wait for the new handshake.
func (c *Client) Restart(ctx context.Context, extension string, wait time.Duration) (RestartResult, error) {
	body, err := json.Marshal(RestartRequest{WaitSeconds: int(wait / time.Second)})
	if err != nil {
		return RestartResult{}, err
	}
	var r RestartResult
	return r, c.do(ctx, http.MethodPost, "/v1/extensions/"+url.PathEscape(extension)+"/restart", body, &r)
}

// Rescan discovers the packages again: new ones are started.
func (c *Client) Rescan(ctx context.Context) (Rescan, error) {
	var r Rescan
	return r, c.do(ctx, http.MethodPost, "/v1/extensions/rescan", []byte("{}"), &r)
}

// Config reads the live generation's text.
func (c *Client) Config(ctx context.Context) (ConfigView, error) {
	var v ConfigView
	return v, c.do(ctx, http.MethodGet, "/v1/config", nil, &v)
}

// ReloadConfig has the daemon read its own config file again and apply it,
// as config apply would (SIGHUP does the same).
func (c *Client) ReloadConfig(ctx context.Context) (Applied, error) {
	var a Applied
	return a, c.do(ctx, http.MethodPost, "/v1/config/reload", []byte("{}"), &a)
}

// Doctor runs the daemon's checks; opts may ask for the deep ones too.
func (c *Client) Doctor(ctx context.Context, opts ...DoctorOptions) (Doctor, error) {
	path := "/v1/doctor"
	for _, o := range opts {
		if o.Deep {
			path = "/v1/doctor?deep=true"
		}
	}
	var d Doctor
	return d, c.do(ctx, http.MethodGet, path, nil, &d)
}

// ValidateConfig checks a config text against the running packages.
func (c *Client) ValidateConfig(ctx context.Context, text []byte) (Validation, error) {
	var v Validation
	return v, c.do(ctx, http.MethodPost, "/v1/config/validate", text, &v)
}

// ApplyConfig validates and applies a config text; packages are configured
// again without a restart.
func (c *Client) ApplyConfig(ctx context.Context, text []byte) (Applied, error) {
	var a Applied
	return a, c.do(ctx, http.MethodPost, "/v1/config/apply", text, &a)
}

// Call calls one of a package's handler operations as the operator. A
// refusal comes back in the result (Code, Message), not as an error.
func (c *Client) Call(ctx context.Context, extension string, req CallRequest) (CallResult, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return CallResult{}, err
	}
	var r CallResult
	return r, c.do(ctx, http.MethodPost, "/v1/extensions/"+url.PathEscape(extension)+"/call", body, &r)
}
