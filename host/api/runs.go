package api

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/protocol"
)

// RunsDaemon is the part of the facade that serves running Work: a Work's
// attempts, its artifacts, the active Waits, and the controls of its
// running execution.
type RunsDaemon interface {
	// WorkExecutions reads a Work's attempts; an unknown Work is
	// protocol.ErrNotFound.
	WorkExecutions(ctx context.Context, id string) (client.Executions, error)
	// WorkArtifacts reads a Work's committed artifacts; an unknown Work is
	// protocol.ErrNotFound.
	WorkArtifacts(ctx context.Context, id string) (client.Artifacts, error)
	// Artifact reads one committed artifact; any other is
	// protocol.ErrNotFound.
	Artifact(ctx context.Context, id string) (client.Artifact, error)
	// ArtifactContent opens a committed artifact's bytes, with its record.
	ArtifactContent(ctx context.Context, id string) (client.Artifact, io.ReadCloser, error)
	// Waits reads one page of the active Waits (q.Limit within
	// 1..client.MaxWaitsPage).
	Waits(ctx context.Context, q client.WaitsQuery) (client.Waits, error)
	// ControlWork applies control (a client.Control*) to a Work's running
	// execution.
	ControlWork(ctx context.Context, id, control, text string) (client.ControlResult, error)
	// WorkLive reads a Work's running execution's outputs, the last tail
	// bytes of each.
	WorkLive(ctx context.Context, id string, tail int) (client.Live, error)
}

// routeRuns registers the routes of running Work.
func routeRuns(mux *http.ServeMux, a adapter) {
	mux.HandleFunc("GET /v1/work/{id}/executions", a.workExecutions)
	mux.HandleFunc("GET /v1/work/{id}/artifacts", a.workArtifacts)
	mux.HandleFunc("GET /v1/artifacts/{id}", a.artifact)
	mux.HandleFunc("GET /v1/artifacts/{id}/content", a.artifactContent)
	mux.HandleFunc("GET /v1/waits", a.waits)
	for _, c := range client.Controls {
		mux.HandleFunc("POST /v1/work/{id}/"+c, a.control(c))
	}
	mux.HandleFunc("GET /v1/work/{id}/live", a.live)
}

func (a adapter) workExecutions(w http.ResponseWriter, r *http.Request) {
	res, err := a.d.WorkExecutions(r.Context(), r.PathValue("id"))
	answer(w, res, err)
}

func (a adapter) workArtifacts(w http.ResponseWriter, r *http.Request) {
	res, err := a.d.WorkArtifacts(r.Context(), r.PathValue("id"))
	answer(w, res, err)
}

func (a adapter) artifact(w http.ResponseWriter, r *http.Request) {
	res, err := a.d.Artifact(r.Context(), r.PathValue("id"))
	answer(w, res, err)
}

// contentRate is the slowest a reader of an artifact's bytes may take
// them: the answer's write deadline grows with the size at this rate, so
// a stalled reader does not hold its connection for ever.
const contentRate = 1 << 20 // bytes a second

// artifactContent streams an artifact's bytes, announcing their size
// (Content-Length) and SHA-256 (client.DigestHeader) first.
func (a adapter) artifactContent(w http.ResponseWriter, r *http.Request) {
	art, body, err := a.d.ArtifactContent(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	defer body.Close()
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.FormatInt(art.Size, 10))
	h.Set(client.DigestHeader, client.DigestField(art.Digest))
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(WriteTimeout + time.Duration(art.Size/contentRate)*time.Second))
	w.WriteHeader(http.StatusOK)
	// A failure midway leaves the answer short of its Content-Length,
	// which the client reports.
	_, _ = io.CopyN(w, body, art.Size)
}

func (a adapter) waits(w http.ResponseWriter, r *http.Request) {
	p := params{r: r}
	q := client.WaitsQuery{After: r.URL.Query().Get("after"), Limit: p.limit(client.MaxWaitsPage)}
	if p.err != nil {
		writeError(w, p.err)
		return
	}
	res, err := a.d.Waits(r.Context(), q)
	answer(w, res, err)
}

// control applies one control; inject takes its text from the body.
func (a adapter) control(control string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req client.ControlRequest
		if err := decode(r, &req); err != nil {
			writeError(w, err)
			return
		}
		switch {
		case control == client.ControlInject && req.Text == "":
			writeError(w, protocol.Errorf(protocol.ErrInvalid, "inject needs text: {\"text\": \"what to tell the running execution\"}"))
			return
		case control != client.ControlInject && req.Text != "":
			writeError(w, protocol.Errorf(protocol.ErrInvalid, "%s takes no text; only inject does", control))
			return
		case len(req.Text) > client.MaxInjectText:
			writeError(w, protocol.Errorf(protocol.ErrTooLarge, "the text is %d bytes, over the %d-byte bound; inject less, or attach a file to the Work's context", len(req.Text), client.MaxInjectText))
			return
		}
		res, err := a.d.ControlWork(r.Context(), r.PathValue("id"), control, req.Text)
		answer(w, res, err)
	}
}

func (a adapter) live(w http.ResponseWriter, r *http.Request) {
	p := params{r: r}
	tail := p.uint("tail")
	switch {
	case p.err != nil:
		writeError(w, p.err)
		return
	case tail > client.MaxLiveTail:
		writeError(w, protocol.Errorf(protocol.ErrInvalid, "tail must be at most %d bytes, not %d", client.MaxLiveTail, tail))
		return
	}
	res, err := a.d.WorkLive(r.Context(), r.PathValue("id"), int(tail))
	answer(w, res, err)
}
