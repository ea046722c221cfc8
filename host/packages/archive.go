package packages

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/open-conduit/open-conduit/protocol"
)

// stageArchive fetches (for a URL) and checks the archive, then unpacks
// its one package directory into stage and returns that directory and the
// archive's digest.
func (in *Installer) stageArchive(ctx context.Context, src Source, stage string) (dir, digest string, err error) {
	want := strings.ToLower(src.SHA256)
	if strings.HasPrefix(src.Path, "http://") && want == "" {
		return "", "", protocol.Errorf(ErrInvalidArchive,
			"%s comes over plain http, which anyone on the way can change: give its --sha256, or use an https URL", src.Path)
	}
	file := src.Path
	if isURL(src.Path) {
		file = filepath.Join(stage, "download.tar.gz")
		if err := in.download(ctx, src.Path, file); err != nil {
			return "", "", err
		}
	}
	digest, err = fileDigest(file)
	if err != nil {
		return "", "", fmt.Errorf("reading the archive %s: %w", src.Path, err)
	}
	if want != "" && digest != want {
		return "", "", protocol.Errorf(ErrInvalidArchive,
			"%s has SHA-256 %s, but --sha256 says %s: the archive is not the one you meant (or the digest is mistyped)", src.Path, digest, want)
	}
	unpacked := filepath.Join(stage, "unpacked")
	if err := os.Mkdir(unpacked, 0o700); err != nil {
		return "", "", err
	}
	top, err := unpackArchive(file, unpacked, in.limits())
	if err != nil {
		return "", "", err
	}
	return filepath.Join(unpacked, top), digest, nil
}

// download fetches url into file, no more than the byte limit.
func (in *Installer) download(ctx context.Context, url, file string) error {
	c := in.HTTP
	if c == nil {
		c = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return protocol.Errorf(ErrInvalidArchive, "%s is not a URL the installer can fetch: %v", url, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return protocol.Errorf(ErrInvalidArchive, "fetching %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return protocol.Errorf(ErrInvalidArchive, "fetching %s: the server answered %s", url, resp.Status)
	}
	out, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	limit := in.limits().Bytes
	n, err := io.Copy(out, io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return protocol.Errorf(ErrInvalidArchive, "fetching %s: %v", url, err)
	}
	if n > limit {
		return protocol.Errorf(ErrInvalidArchive, "%s is larger than %d bytes", url, limit)
	}
	return out.Close()
}

func fileDigest(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// unpackArchive unpacks the .tar.gz file into dst and returns its one
// top-level directory's name. It refuses, naming the entry, a path that
// escapes the directory, a link, a special file, a second top-level entry,
// and more than the limits allow; macOS ._* metadata is skipped.
func unpackArchive(file, dst string, l Limits) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return "", protocol.Errorf(ErrInvalidArchive, "%s is not a gzip-compressed tar archive (.tar.gz): %v", filepath.Base(file), err)
	}
	u := &unpacker{dst: dst, limits: l}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", protocol.Errorf(ErrInvalidArchive, "the archive is damaged or not a tar archive: %v", err)
		}
		if err := u.entry(h, tr); err != nil {
			return "", err
		}
	}
	if u.top == "" {
		return "", protocol.Errorf(ErrInvalidArchive, "the archive is empty: it must hold one package directory")
	}
	return u.top, nil
}

// unpacker is one archive's unpacking: the top-level directory seen and
// what was written, against the limits.
type unpacker struct {
	dst     string
	limits  Limits
	top     string
	entries int
	bytes   int64
}

func (u *unpacker) entry(h *tar.Header, r io.Reader) error {
	switch h.Typeflag {
	case tar.TypeXGlobalHeader:
		return nil
	case tar.TypeSymlink, tar.TypeLink:
		return protocol.Errorf(ErrInvalidArchive, "entry %q is a link (to %q): an archive holds only regular files and directories", h.Name, h.Linkname)
	case tar.TypeReg, tar.TypeDir:
	default:
		return protocol.Errorf(ErrInvalidArchive, "entry %q is a special file (tar type %q): an archive holds only regular files and directories", h.Name, string(h.Typeflag))
	}
	rel, err := entryPath(h.Name)
	if err != nil {
		return err
	}
	if rel == "" || strings.HasPrefix(path.Base(rel), "._") {
		return nil
	}
	top, _, nested := strings.Cut(rel, "/")
	switch {
	case u.top == "":
		u.top = top
	case top != u.top:
		return protocol.Errorf(ErrInvalidArchive, "entry %q is a second top-level entry beside %q: an archive holds one package directory", h.Name, u.top)
	}
	if !nested && h.Typeflag != tar.TypeDir {
		return protocol.Errorf(ErrInvalidArchive, "the archive's top-level entry %q is a file: an archive holds one package directory", h.Name)
	}
	u.entries++
	if u.entries > u.limits.Entries {
		return protocol.Errorf(ErrInvalidArchive, "the archive holds more than %d entries (at %q)", u.limits.Entries, h.Name)
	}
	target := filepath.Join(u.dst, filepath.FromSlash(rel))
	if h.Typeflag == tar.TypeDir {
		if err := os.MkdirAll(target, 0o700); err != nil {
			return protocol.Errorf(ErrInvalidArchive, "entry %q: %v", h.Name, err)
		}
		return nil
	}
	return u.file(h, r, target)
}

// file writes one regular file, its parents made 0700, bounded by what is
// left of the byte limit (a header may understate what follows).
func (u *unpacker) file(h *tar.Header, r io.Reader, target string) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		return protocol.Errorf(ErrInvalidArchive, "entry %q: %v", h.Name, err)
	}
	out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode(os.FileMode(h.Mode).Perm()))
	if err != nil {
		return protocol.Errorf(ErrInvalidArchive, "entry %q: %v (is it in the archive twice?)", h.Name, err)
	}
	defer out.Close()
	left := u.limits.Bytes - u.bytes
	n, err := io.Copy(out, io.LimitReader(r, left+1))
	u.bytes += n
	if err != nil {
		return protocol.Errorf(ErrInvalidArchive, "entry %q: %v", h.Name, err)
	}
	if u.bytes > u.limits.Bytes {
		return protocol.Errorf(ErrInvalidArchive, "the archive unpacks to more than %d bytes (at %q)", u.limits.Bytes, h.Name)
	}
	return out.Close()
}

// entryPath is an entry's path relative to the unpacking directory, with
// "./" and trailing slashes dropped; an absolute path or a ".." element is
// refused, since it could reach outside it.
func entryPath(name string) (string, error) {
	if strings.HasPrefix(name, "/") || strings.Contains(name, `\`) || filepath.IsAbs(name) {
		return "", protocol.Errorf(ErrInvalidArchive, "entry %q is an absolute path: an archive's paths are relative to its package directory", name)
	}
	var parts []string
	for _, p := range strings.Split(name, "/") {
		switch p {
		case "..":
			return "", protocol.Errorf(ErrInvalidArchive, "entry %q escapes the package directory (..): an archive's paths stay inside it", name)
		case "", ".":
			continue
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "/"), nil
}
