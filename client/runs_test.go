package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// contentDaemon serves body as an artifact's content on a real socket in
// a new state directory, announcing digest and length.
func contentDaemon(t *testing.T, body, digest string, length int) *Client {
	t.Helper()
	dir := t.TempDir()
	ln, err := net.Listen("unix", SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if digest != "" {
			w.Header().Set(DigestHeader, DigestField(digest))
		}
		w.Header().Set("Content-Length", strconv.Itoa(length))
		_, _ = w.Write([]byte(body))
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return New(dir)
}

func TestArtifactContentChecksWhatTheDaemonAnnounced(t *testing.T) {
	body := "the transcript\n"
	sum := sha256.Sum256([]byte(body))
	good := hex.EncodeToString(sum[:])
	tests := []struct {
		name, digest string
		length       int
		says         string
	}{
		{"the bytes it announced", good, len(body), ""},
		{"another digest", strings.Repeat("0", 64), len(body), "not the"},
		{"no digest", "", len(body), "no " + DigestHeader},
		{"fewer bytes than announced", good, len(body) + 10, ""}, // the transport fails it: unexpected EOF
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := contentDaemon(t, body, tt.digest, tt.length)
			var got bytes.Buffer
			n, d, err := c.ArtifactContent(context.Background(), "a_1", &got)
			if tt.length == len(body) && tt.says == "" {
				if err != nil || n != int64(len(body)) || d != good || got.String() != body {
					t.Fatalf("%d %s %v", n, d, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("%v, want an error saying %q", err, tt.says)
			}
		})
	}
}

func TestDigestFieldRoundTrips(t *testing.T) {
	d := strings.Repeat("0f", 32)
	if got := digestOfField(DigestField(d)); got != d {
		t.Fatalf("%s → %s → %s", d, DigestField(d), got)
	}
	if digestOfField("md5=:abc:") != "" {
		t.Fatal("a field with no sha-256 named a digest")
	}
}
