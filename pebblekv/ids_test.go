package pebblekv

import (
	"strings"
	"testing"
)

func TestNewExecutionIDIsUniqueAndNotAClock(t *testing.T) {
	const n = 10000
	seen := map[string]bool{}
	for range n {
		id := NewExecutionID()
		if len(id) != len("x_")+idChars || !strings.HasPrefix(id, "x_") || strings.Trim(id[2:], idAlphabet) != "" {
			t.Fatalf("NewExecutionID() = %q, want x_ and %d characters of %s", id, idChars, idAlphabet)
		}
		if seen[id] {
			t.Fatalf("NewExecutionID() repeated %q", id)
		}
		seen[id] = true
	}
	// IDs made within the same millisecond share no clock prefix: their
	// first nine characters (45 bits) are all distinct. Wait IDs, which
	// do begin with a clock, are the negative control.
	for _, tc := range []struct {
		name     string
		id       func() string
		prefix   int
		distinct bool
	}{
		{"execution IDs", NewExecutionID, 2, true},
		{"Wait IDs (time first)", NewWaitID, 3, false},
		{"artifact IDs (time first)", NewArtifactID, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			heads := map[string]bool{}
			const m = 200
			for range m {
				heads[tc.id()[tc.prefix:tc.prefix+9]] = true
			}
			if got := len(heads) == m; got != tc.distinct {
				t.Errorf("%d distinct leading characters of %d IDs; want all distinct: %v", len(heads), m, tc.distinct)
			}
		})
	}
}

func TestTokenHashIsStableAndNotTheToken(t *testing.T) {
	tok, hash := NewToken()
	other, otherHash := NewToken()
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"a token is 43 characters of unpadded base64url", len(tok) == 43 && strings.Trim(tok, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") == ""},
		{"NewToken's hash is TokenHash of its token", hash == TokenHash(tok)},
		{"the hash is stable", TokenHash(tok) == TokenHash(tok)},
		{"the hash is a lower-case hex SHA-256", isHexDigest(hash)},
		{"the hash does not hold the token", !strings.Contains(hash, tok) && hash != tok},
		{"two tokens differ, and so do their hashes", tok != other && hash != otherHash},
		{"a token one character off hashes elsewhere", TokenHash(tok[:42]+"A") != hash || tok[42] == 'A'},
	} {
		if !tc.ok {
			t.Errorf("%s: token %d chars, hash %q", tc.name, len(tok), hash)
		}
	}
}
