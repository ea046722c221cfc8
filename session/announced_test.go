package session

import (
	"testing"

	"github.com/open-conduit/open-conduit/protocol"
)

// TestAnnouncedTakesTheWrittenManifestWithoutDecoding: an answer that is
// exactly what the SDK writes for the package manifest is taken as it is;
// every other shape, however close, decodes as before, and a manifest that
// differs is decoded for the semantic comparison to judge.
func TestAnnouncedTakesTheWrittenManifestWithoutDecoding(t *testing.T) {
	m := protocol.Manifest{Name: "echo", Protocol: []int{1}, Command: []string{"./echo"},
		Provides: protocol.Provides{Operations: []protocol.Operation{{Name: "echo.say", Kind: protocol.OperationHandler, Input: []byte(`{"type":"object"}`)}}}}
	written, err := m.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	exact, err := protocol.InitializeResult{ProtocolVersion: 1, Manifest: m}.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	other := m
	other.Version = "2.0.0"
	differs, _ := protocol.InitializeResult{ProtocolVersion: 1, Manifest: other}.AppendJSON(nil)
	cases := []struct {
		name     string
		answer   string
		verbatim bool
		version  int
		manifest string // the decoded manifest's name, when decoded
		wantErr  bool
	}{
		{"exact", string(exact), true, 1, "", false},
		{"two_digit_version", `{"protocol_version":12,"manifest":` + string(written) + `}`, true, 12, "", false},
		{"spaced", `{"protocol_version": 1, "manifest": ` + string(written) + `}`, false, 1, "echo", false},
		{"reordered", `{"manifest":` + string(written) + `,"protocol_version":1}`, false, 1, "echo", false},
		{"leading_zero", `{"protocol_version":01,"manifest":` + string(written) + `}`, false, 0, "", true},
		{"extra_member", `{"protocol_version":1,"manifest":` + string(written) + `,"x":1}`, false, 1, "echo", false},
		{"different_manifest", string(differs), false, 1, "echo", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := announced{written: func() []byte { return written }}
			err := a.UnmarshalJSONOnePass([]byte(tc.answer))
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			if a.verbatim != tc.verbatim || a.result.ProtocolVersion != tc.version || a.result.Manifest.Name != tc.manifest {
				t.Fatalf("verbatim %v, version %d, decoded manifest %q; want %v, %d, %q",
					a.verbatim, a.result.ProtocolVersion, a.result.Manifest.Name, tc.verbatim, tc.version, tc.manifest)
			}
		})
	}
	// Without the package's bytes, the exact answer decodes too.
	a := announced{}
	if err := a.UnmarshalJSONOnePass(exact); err != nil || a.verbatim || a.result.Manifest.Name != "echo" {
		t.Fatalf("with nothing to compare: verbatim %v, manifest %q, %v", a.verbatim, a.result.Manifest.Name, err)
	}
}
