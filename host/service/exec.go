package service

import (
	"context"

	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// The methods of running Work an extension calls: artifacts, and
// execution.persist_recovery and wait.progress, which the service judges
// by who is calling (the execution must be the extension's own, the Wait
// one its operation declared) before the engine applies them under its
// own rules (the lease, the Wait still active).

func (s *Service) artifactCreate(_ context.Context, p protocol.ArtifactCreateParams) (protocol.ArtifactCreateResult, error) {
	if s.deps.Artifacts == nil {
		return protocol.ArtifactCreateResult{}, errNoArtifacts()
	}
	res, err := s.deps.Artifacts.Create(s.name, p)
	return res, s.refuseCoded(err)
}

func (s *Service) artifactWrite(ctx context.Context, p protocol.ArtifactWriteParams) (protocol.ArtifactWriteResult, error) {
	if s.deps.Artifacts == nil {
		return protocol.ArtifactWriteResult{}, errNoArtifacts()
	}
	res, err := s.deps.Artifacts.Write(ctx, s.name, p)
	return res, s.refuseCoded(err)
}

func (s *Service) artifactCommit(_ context.Context, p protocol.ArtifactCommitParams) (protocol.ArtifactCommitResult, error) {
	if s.deps.Artifacts == nil {
		return protocol.ArtifactCommitResult{}, errNoArtifacts()
	}
	res, err := s.deps.Artifacts.Commit(s.name, p)
	return res, s.refuseCoded(err)
}

func (s *Service) artifactAbort(_ context.Context, p protocol.ArtifactAbortParams) (struct{}, error) {
	if s.deps.Artifacts == nil {
		return struct{}{}, errNoArtifacts()
	}
	return struct{}{}, s.refuseCoded(s.deps.Artifacts.Abort(s.name, p))
}

func errNoArtifacts() error {
	return protocol.Errorf(protocol.ErrUnsupported, "this host keeps no artifacts")
}

// refuseCoded counts err as a refusal when it is one of the protocol's
// (a failure of the host itself is not the extension's doing).
func (s *Service) refuseCoded(err error) error {
	if err != nil && protocol.CodeOf(err) != "" {
		return s.refuse(err)
	}
	return err
}

// persistRecovery stores an execution's recovery metadata: only for an
// execution of the extension's own executors (any other is not_found, so
// nothing is learnt of another's), within protocol.MaxRecoveryBytes; the
// engine then fences it by the lease epoch.
func (s *Service) persistRecovery(ctx context.Context, p protocol.ExecutionPersistRecoveryParams) (protocol.ExecutionPersistRecoveryResult, error) {
	var none protocol.ExecutionPersistRecoveryResult
	if len(p.Recovery) > protocol.MaxRecoveryBytes {
		return none, s.refuse(protocol.Errorf(protocol.ErrTooLarge, "%s: %d bytes of recovery metadata are over the %d-byte bound; keep what recovery needs (a pid, a path)",
			protocol.MethodExecutionPersistRecovery, len(p.Recovery), protocol.MaxRecoveryBytes))
	}
	var (
		x     pebblekv.Execution
		found bool
	)
	if p.Execution != "" {
		err := s.deps.DB.View(func(r *pebblekv.Reader) (err error) {
			x, found, err = r.Execution(p.Execution)
			return err
		})
		if err != nil {
			return none, err
		}
	}
	if !found || x.Package != s.name {
		return none, s.refuse(protocol.Errorf(protocol.ErrNotFound, "%s: no execution %q of %s's executors",
			protocol.MethodExecutionPersistRecovery, p.Execution, s.name))
	}
	if s.deps.PersistRecovery == nil {
		return none, protocol.Errorf(protocol.ErrUnsupported, "%s: this host runs no Work", protocol.MethodExecutionPersistRecovery)
	}
	return none, s.refuseCoded(s.deps.PersistRecovery(ctx, s.name, p))
}

// waitProgress sets the progress line of a Work's active Wait: only the
// package whose wait operation declared it may (another is unauthorized;
// a Work with no active Wait is not_found).
func (s *Service) waitProgress(ctx context.Context, p protocol.WaitProgressParams) (protocol.WaitProgressResult, error) {
	var (
		none  protocol.WaitProgressResult
		w     pebblekv.Wait
		found bool
	)
	if p.Work != "" {
		err := s.deps.DB.View(func(r *pebblekv.Reader) (err error) {
			w, found, err = r.ActiveWait(p.Work)
			return err
		})
		if err != nil {
			return none, err
		}
	}
	switch {
	case !found:
		return none, s.refuse(protocol.Errorf(protocol.ErrNotFound, "%s: Work %q has no active Wait", protocol.MethodWaitProgress, p.Work))
	case w.Owner != s.name:
		return none, s.refuse(protocol.Errorf(protocol.ErrUnauthorized, "%s: the Wait of Work %s was not declared by %s's wait operation; only its owner sets its progress",
			protocol.MethodWaitProgress, p.Work, s.name))
	case s.deps.WaitProgress == nil:
		return none, protocol.Errorf(protocol.ErrUnsupported, "%s: this host runs no Work", protocol.MethodWaitProgress)
	}
	return none, s.refuseCoded(s.deps.WaitProgress(ctx, s.name, p))
}
