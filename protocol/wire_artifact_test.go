package protocol

import (
	"strings"
	"testing"
)

func TestCheckArtifactCreateRefusesWhatNoHostKeeps(t *testing.T) {
	tests := []struct {
		name string
		p    ArtifactCreateParams
		code string
	}{
		{"a name and a media type", ArtifactCreateParams{Name: "transcript.txt", MediaType: "text/plain"}, ""},
		{"no name", ArtifactCreateParams{}, CodeInvalid},
		{"a control character", ArtifactCreateParams{Name: "a\tb"}, CodeInvalid},
		{"a long name", ArtifactCreateParams{Name: strings.Repeat("n", MaxArtifactName+1)}, CodeTooLarge},
		{"a name at the bound", ArtifactCreateParams{Name: strings.Repeat("n", MaxArtifactName)}, ""},
		{"a long media type", ArtifactCreateParams{Name: "x", MediaType: strings.Repeat("m", MaxArtifactName+1)}, CodeTooLarge},
		{"a media type of two lines", ArtifactCreateParams{Name: "x", MediaType: "text/plain\nx"}, CodeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CodeOf(CheckArtifactCreate(tt.p)); got != tt.code {
				t.Fatalf("code %q, want %q", got, tt.code)
			}
		})
	}
}

func TestCheckArtifactChunkBoundsTheChunk(t *testing.T) {
	if err := CheckArtifactChunk(ArtifactWriteParams{Data: make([]byte, MaxChunkBytes)}); err != nil {
		t.Fatalf("a chunk at the bound: %v", err)
	}
	if got := CodeOf(CheckArtifactChunk(ArtifactWriteParams{Data: make([]byte, MaxChunkBytes+1)})); got != CodeInvalid {
		t.Fatalf("a chunk over the bound: %q, want invalid", got)
	}
}

func TestCutLineKeepsTheFirstLineWithinTheBoundOnACharacter(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"first\nsecond", 100, "first"},
		{"first\r\nsecond", 100, "first"},
		{"abcdef", 3, "abc"},
		{"aé", 2, "a"}, // é is two bytes: never cut inside it
		{"éé", 3, "é"},
		{"", 5, ""},
	}
	for _, tt := range tests {
		if got := CutLine(tt.in, tt.max); got != tt.want {
			t.Errorf("CutLine(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}
