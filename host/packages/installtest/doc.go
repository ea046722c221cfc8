// Package installtest holds the installer's tests through the real
// open-conduit binary: install, update, rollback and remove against a
// running daemon, release archives, and each refusal. It has no code of
// its own.
package installtest
