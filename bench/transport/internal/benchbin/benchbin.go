// Package benchbin builds the benchmark's extension binaries, lays ours out
// as a package and calls its operations, the same way for transportbench
// and its profilers.
package benchbin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/session"
)

// Build builds pkg to out with flags, static (CGO_ENABLED=0), as release
// binaries are. A cgo build links libc dynamically as soon as the net
// package is in (jsonrpc2 and gRPC both import it), which alone cost about
// 1.2 ms of every start here.
func Build(out, pkg string, flags ...string) error { return BuildIn("", out, pkg, flags...) }

// BuildIn is Build run in dir, so pkg may name a package of another checkout
// of this module (an A/B comparison); "" is the current directory.
func BuildIn(dir, out, pkg string, flags ...string) error {
	args := append([]string{"build", "-o", out}, flags...)
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w", pkg, err)
	}
	return nil
}

// Package lays an SDK extension binary out as a package: the manifest it
// prints (package-manifest) written beside it and validated.
func Package(bin string) (session.Package, error) { return PackageAs(bin, bin) }

// PackageAs lays bin out as a package with the manifest that from, a copy
// of the same binary, prints. bin itself never runs, so its first run is a
// cold start's: the first exec of a file costs more than the next.
func PackageAs(bin, from string) (session.Package, error) {
	out, err := exec.Command(from, "package-manifest").Output()
	if err != nil {
		return session.Package{}, fmt.Errorf("package-manifest: %w", err)
	}
	dir := filepath.Dir(bin)
	if err := os.WriteFile(filepath.Join(dir, protocol.ManifestFile), out, 0o644); err != nil {
		return session.Package{}, err
	}
	m, err := protocol.ParseAndValidateManifest(out)
	if err != nil {
		return session.Package{}, err
	}
	return session.Package{Dir: dir, Manifest: m}, nil
}

// Call calls op on the extension through operation.call with in encoded as
// its input, and decodes the output into Out.
func Call[Out any](ctx context.Context, s *session.Session, op string, in any) (Out, error) {
	var out Out
	data, err := json.Marshal(in)
	if err != nil {
		return out, err
	}
	var res protocol.OperationCallResult
	if err := s.Call(ctx, protocol.MethodOperationCall, protocol.OperationCallParams{
		Operation: op, Input: protocol.Payload{Data: data},
	}, &res); err != nil {
		return out, err
	}
	return out, json.Unmarshal(res.Output.Data, &out)
}
