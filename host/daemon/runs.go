package daemon

import (
	"context"
	"fmt"
	"io"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// The operator's view of running Work: attempts, artifacts, Waits, and
// the controls and live output of a running execution, which the engine
// applies.

// workExists reads whether Work id exists; an unknown one is
// protocol.ErrNotFound.
func workExists(r *pebblekv.Reader, id string) error {
	_, found, err := r.Work(id)
	if err == nil && !found {
		err = errUnknownWork(id)
	}
	return err
}

// WorkExecutions reads a Work's attempts, first to last.
func (d *Daemon) WorkExecutions(_ context.Context, id string) (client.Executions, error) {
	res := client.Executions{Work: id, Executions: []client.Execution{}}
	err := d.db.View(func(r *pebblekv.Reader) error {
		if err := workExists(r, id); err != nil {
			return err
		}
		xs, err := r.ExecutionsOf(id)
		for _, x := range xs {
			res.Executions = append(res.Executions, executionView(x))
		}
		return err
	})
	if err != nil {
		return client.Executions{}, readErr("the executions of Work "+id, err)
	}
	return res, nil
}

// WorkArtifacts reads a Work's committed artifacts, of all its
// executions.
func (d *Daemon) WorkArtifacts(_ context.Context, id string) (client.Artifacts, error) {
	res := client.Artifacts{Work: id, Artifacts: []client.Artifact{}}
	err := d.db.View(func(r *pebblekv.Reader) error {
		if err := workExists(r, id); err != nil {
			return err
		}
		as, err := r.ArtifactsOfWork(id)
		for _, a := range as {
			if a.State == pebblekv.ArtifactCommitted {
				res.Artifacts = append(res.Artifacts, artifactView(a))
			}
		}
		return err
	})
	if err != nil {
		return client.Artifacts{}, readErr("the artifacts of Work "+id, err)
	}
	return res, nil
}

// Artifact reads one committed artifact's record.
func (d *Daemon) Artifact(_ context.Context, id string) (client.Artifact, error) {
	var (
		a     pebblekv.Artifact
		found bool
	)
	err := d.db.View(func(r *pebblekv.Reader) (err error) {
		a, found, err = r.Artifact(id)
		return err
	})
	switch {
	case err != nil:
		return client.Artifact{}, fmt.Errorf("reading artifact %s: %w", id, err)
	case !found || a.State != pebblekv.ArtifactCommitted:
		return client.Artifact{}, errUnknownArtifact(id)
	}
	return artifactView(a), nil
}

// ArtifactContent opens a committed artifact's bytes from the
// content-addressed store.
func (d *Daemon) ArtifactContent(_ context.Context, id string) (client.Artifact, io.ReadCloser, error) {
	if d.artifacts == nil {
		return client.Artifact{}, nil, protocol.Errorf(protocol.ErrUnavailable, "the daemon is starting; its artifacts are not open yet")
	}
	a, f, err := d.artifacts.Read(id)
	if err != nil {
		if protocol.CodeOf(err) != "" {
			return client.Artifact{}, nil, errUnknownArtifact(id)
		}
		return client.Artifact{}, nil, err
	}
	return artifactView(a), f, nil
}

func errUnknownArtifact(id string) error {
	return protocol.Errorf(protocol.ErrNotFound, "no committed artifact %q; 'open-conduit work artifacts WORK' lists a Work's", id)
}

// Waits reads one page of the active Waits, by count and bytes.
func (d *Daemon) Waits(_ context.Context, q client.WaitsQuery) (client.Waits, error) {
	res := client.Waits{Waits: []client.Wait{}}
	var (
		ws   []pebblekv.Wait
		more bool
	)
	err := d.db.View(func(r *pebblekv.Reader) (err error) {
		ws, more, err = r.ActiveWaits(q.After, q.Limit)
		return err
	})
	if err != nil {
		return client.Waits{}, readErr("the Waits", err)
	}
	for _, w := range ws {
		res.Waits = append(res.Waits, waitView(w))
	}
	if more && len(ws) > 0 {
		res.Next = ws[len(ws)-1].ID
	}
	return res, nil
}

// ControlWork hands an operator's control of a known Work to the engine.
func (d *Daemon) ControlWork(ctx context.Context, id, control, text string) (client.ControlResult, error) {
	if err := d.db.View(func(r *pebblekv.Reader) error { return workExists(r, id) }); err != nil {
		return client.ControlResult{}, readErr("Work "+id, err)
	}
	if err := d.engine.Control(ctx, id, control, text); err != nil {
		return client.ControlResult{}, err
	}
	return client.ControlResult{Work: id, Control: control}, nil
}

// WorkLive reads a known Work's running execution's outputs from the
// engine.
func (d *Daemon) WorkLive(ctx context.Context, id string, tail int) (client.Live, error) {
	if err := d.db.View(func(r *pebblekv.Reader) error { return workExists(r, id) }); err != nil {
		return client.Live{}, readErr("Work "+id, err)
	}
	if tail <= 0 {
		tail = client.MaxLiveTail
	}
	res, err := d.engine.Live(ctx, id, tail)
	if err != nil {
		return client.Live{}, err
	}
	out := client.Live{Work: id, Outputs: res.Outputs}
	if out.Outputs == nil {
		out.Outputs = []protocol.LiveOutput{}
	}
	return out, nil
}

// readErr keeps a refusal (it carries a protocol code) as it is and says
// what was being read for any other failure.
func readErr(what string, err error) error {
	if err == nil || protocol.CodeOf(err) != "" {
		return err
	}
	return fmt.Errorf("reading %s: %w", what, err)
}

func executionView(x pebblekv.Execution) client.Execution {
	return client.Execution{
		ID: x.ID, Work: x.Work, Attempt: x.Attempt, Package: x.Package, Executor: x.Executor, Epoch: x.Epoch,
		State: x.State, Outcome: x.Outcome, Reason: x.Reason, ExitCode: x.ExitCode,
		Declared: x.Declared, DeclaredReason: x.DeclaredReason, Wait: x.Wait, Started: x.Started, Settled: x.Settled,
	}
}

func waitView(w pebblekv.Wait) client.Wait {
	return client.Wait{
		ID: w.ID, Work: w.Work, Scope: w.Scope, Execution: w.Execution, Owner: w.Owner, Description: w.Description,
		Progress: w.Progress, Due: w.Due, State: w.State, Created: w.Created, Updated: w.Updated,
	}
}

func artifactView(a pebblekv.Artifact) client.Artifact {
	return client.Artifact{
		ID: a.ID, Work: a.Work, Execution: a.Execution, Package: a.Package, Name: a.Name, MediaType: a.MediaType,
		Size: a.Size, Digest: a.Digest, Created: a.Created, Committed: a.Committed,
	}
}
