package client

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/protocol"
)

// Execution is one attempt of a Work on an executor, as the operator sees
// it (never its token or recovery metadata).
type Execution struct {
	ID       string `json:"id"`
	Work     string `json:"work_id"`
	Attempt  int    `json:"attempt"`
	Package  string `json:"package"`
	Executor string `json:"executor"`
	// Epoch is the lease epoch: each recovery of the attempt takes the
	// next one.
	Epoch uint64 `json:"lease_epoch"`
	// State is running or settled.
	State string `json:"state"`
	// Outcome (completed, failed, waiting, handoff), Reason and ExitCode
	// are set once settled.
	Outcome  string `json:"outcome,omitempty"`
	Reason   string `json:"reason,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
	// Declared is the outcome the execution declared itself, with its
	// reason.
	Declared       string    `json:"declared,omitempty"`
	DeclaredReason string    `json:"declared_reason,omitempty"`
	Wait           string    `json:"wait_id,omitempty"`
	Started        time.Time `json:"started"`
	Settled        time.Time `json:"settled,omitzero"`
}

// Executions is GET /v1/work/{id}/executions: a Work's attempts, first to
// last.
type Executions struct {
	Work       string      `json:"work_id"`
	Executions []Execution `json:"executions"`
}

// Wait is what a waiting Work waits for: an Event routed to it, or its
// due time.
type Wait struct {
	ID        string `json:"id"`
	Work      string `json:"work_id"`
	Scope     string `json:"scope_id"`
	Execution string `json:"execution_id,omitempty"`
	// Owner is the package whose wait operation declared it; "" for the
	// builtin wait.
	Owner       string `json:"owner,omitempty"`
	Description string `json:"description,omitempty"`
	// Progress is the line its owner last set (wait.progress).
	Progress string    `json:"progress,omitempty"`
	Due      time.Time `json:"due,omitzero"`
	State    string    `json:"state"`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
}

// MaxWaitsPage is the largest page of GET /v1/waits.
const MaxWaitsPage = 1000

// WaitsQuery pages GET /v1/waits.
type WaitsQuery struct {
	// After is the cursor: the ID of the last Wait of the page before
	// (a page's Next).
	After string
	// Limit bounds the page (the daemon caps it at MaxWaitsPage).
	Limit int
}

// Waits is GET /v1/waits: one page of the active Waits in the order of
// their Works' IDs, by count and bytes.
type Waits struct {
	Waits []Wait `json:"waits"`
	// Next, when set, is the cursor of the page that follows.
	Next string `json:"next,omitempty"`
}

// Artifact is one committed output of an execution, kept by the daemon
// under its content's SHA-256.
type Artifact struct {
	ID        string    `json:"id"`
	Work      string    `json:"work_id,omitempty"`
	Execution string    `json:"execution_id,omitempty"`
	Package   string    `json:"package"`
	Name      string    `json:"name"`
	MediaType string    `json:"media_type,omitempty"`
	Size      int64     `json:"size"`
	Digest    string    `json:"digest"`
	Created   time.Time `json:"created"`
	Committed time.Time `json:"committed"`
}

// Artifacts is GET /v1/work/{id}/artifacts: a Work's committed artifacts,
// of all its executions, about in creation order.
type Artifacts struct {
	Work      string     `json:"work_id"`
	Artifacts []Artifact `json:"artifacts"`
}

// DigestHeader is the header of GET /v1/artifacts/{id}/content that
// carries the bytes' SHA-256 (RFC 9530: "sha-256=:<base64>:").
const DigestHeader = "Repr-Digest"

// DigestField is the DigestHeader value of a hex SHA-256.
func DigestField(hexDigest string) string {
	raw, err := hex.DecodeString(hexDigest)
	if err != nil {
		return ""
	}
	return "sha-256=:" + base64.StdEncoding.EncodeToString(raw) + ":"
}

// digestOfField is the hex SHA-256 a DigestHeader value names, "" for
// none.
func digestOfField(field string) string {
	for _, part := range strings.Split(field, ",") {
		v, ok := strings.CutPrefix(strings.TrimSpace(part), "sha-256=:")
		if !ok {
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSuffix(v, ":"))
		if err == nil {
			return hex.EncodeToString(raw)
		}
	}
	return ""
}

// Controls of a Work's running execution (POST /v1/work/{id}/<control>).
const (
	ControlInterrupt = "interrupt"
	ControlInject    = "inject"
	ControlStop      = "stop"
)

// Controls are the controls, in the order help lists them.
var Controls = []string{ControlInterrupt, ControlInject, ControlStop}

// MaxInjectText bounds the text an operator injects.
const MaxInjectText = 64 << 10

// ControlRequest is the body of POST /v1/work/{id}/inject: the text to
// give the running execution (interrupt and stop take none).
type ControlRequest struct {
	Text string `json:"text,omitempty"`
}

// ControlResult is the answer of a control the executor took.
type ControlResult struct {
	Work    string `json:"work_id"`
	Control string `json:"control"`
}

// MaxLiveTail is the most bytes of each output GET /v1/work/{id}/live
// returns.
const MaxLiveTail = 64 << 10

// Live is GET /v1/work/{id}/live: a Work's running execution's outputs so
// far, each with its last bytes.
type Live struct {
	Work    string                `json:"work_id"`
	Outputs []protocol.LiveOutput `json:"outputs"`
}

// WorkExecutions reads a Work's attempts.
func (c *Client) WorkExecutions(ctx context.Context, work string) (Executions, error) {
	var x Executions
	return x, c.do(ctx, http.MethodGet, "/v1/work/"+url.PathEscape(work)+"/executions", nil, &x)
}

// WorkArtifacts reads a Work's committed artifacts.
func (c *Client) WorkArtifacts(ctx context.Context, work string) (Artifacts, error) {
	var a Artifacts
	return a, c.do(ctx, http.MethodGet, "/v1/work/"+url.PathEscape(work)+"/artifacts", nil, &a)
}

// Artifact reads one committed artifact's record.
func (c *Client) Artifact(ctx context.Context, id string) (Artifact, error) {
	var a Artifact
	return a, c.do(ctx, http.MethodGet, "/v1/artifacts/"+url.PathEscape(id), nil, &a)
}

// ArtifactContent copies a committed artifact's bytes to w as they
// arrive, checking their size and SHA-256 against what the daemon
// announced; it returns the size and hex digest. A mismatch is an error
// after the bytes were written: discard what w holds.
func (c *Client) ArtifactContent(ctx context.Context, id string, w io.Writer) (int64, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://open-conduit/v1/artifacts/"+url.PathEscape(id)+"/content", nil)
	if err != nil {
		return 0, "", err
	}
	// The copy runs as long as the bytes take; ctx bounds it.
	hc := *c.http
	hc.Timeout = 0
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", c.dialError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var e Error
		if json.Unmarshal(data, &e) == nil && e.Message != "" {
			return 0, "", &e
		}
		return 0, "", fmt.Errorf("reading artifact %s: %s", id, resp.Status)
	}
	want := digestOfField(resp.Header.Get(DigestHeader))
	if want == "" {
		return 0, "", fmt.Errorf("reading artifact %s: the daemon sent no %s", id, DigestHeader)
	}
	sum := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, sum), resp.Body)
	if err != nil {
		return n, "", fmt.Errorf("reading artifact %s: %w", id, err)
	}
	got := hex.EncodeToString(sum.Sum(nil))
	switch {
	case resp.ContentLength >= 0 && n != resp.ContentLength:
		return n, got, fmt.Errorf("artifact %s: %d bytes arrived of %d", id, n, resp.ContentLength)
	case got != want:
		return n, got, fmt.Errorf("artifact %s: the bytes have SHA-256 %s, not the %s announced", id, got, want)
	}
	return n, got, nil
}

// Waits reads one page of the active Waits.
func (c *Client) Waits(ctx context.Context, q WaitsQuery) (Waits, error) {
	v := url.Values{}
	setNonEmpty(v, "after", q.After)
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var w Waits
	return w, c.do(ctx, http.MethodGet, "/v1/waits?"+v.Encode(), nil, &w)
}

// ControlWork applies a control (ControlInterrupt, ControlInject with
// text, ControlStop) to a Work's running execution.
func (c *Client) ControlWork(ctx context.Context, work, control, text string) (ControlResult, error) {
	var body []byte
	if control == ControlInject {
		var err error
		if body, err = json.Marshal(ControlRequest{Text: text}); err != nil {
			return ControlResult{}, err
		}
	}
	var r ControlResult
	return r, c.do(ctx, http.MethodPost, "/v1/work/"+url.PathEscape(work)+"/"+url.PathEscape(control), body, &r)
}

// WorkLive reads a Work's running execution's outputs so far, the last
// tail bytes of each (0: the daemon's default, at most MaxLiveTail).
func (c *Client) WorkLive(ctx context.Context, work string, tail int) (Live, error) {
	v := url.Values{}
	if tail > 0 {
		v.Set("tail", strconv.Itoa(tail))
	}
	var l Live
	return l, c.do(ctx, http.MethodGet, "/v1/work/"+url.PathEscape(work)+"/live?"+v.Encode(), nil, &l)
}
