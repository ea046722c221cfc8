package pebblekv

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"time"
)

// idAlphabet is Crockford's base32 in lower case: byte order is value
// order, so IDs that begin with a time sort by it.
const idAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// idChars is how many characters an ID has after its prefix: 128 bits as
// 26 characters of 5 bits, the first holding the top 3.
const idChars = 26

// timeID returns prefix and 26 base32 characters, the first ten the time
// in milliseconds and the rest 80 random bits: IDs in byte order are about
// in creation order.
func timeID(prefix string) string {
	var raw [16]byte
	binary.BigEndian.PutUint64(raw[:8], uint64(time.Now().UnixMilli())<<16)
	_, _ = rand.Read(raw[6:])
	return base32ID(prefix, raw)
}

// randomID returns prefix and 26 base32 characters of 128 random bits: an
// ID nobody can guess from another.
func randomID(prefix string) string {
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	return base32ID(prefix, raw)
}

// base32ID encodes raw after prefix.
func base32ID(prefix string, raw [16]byte) string {
	hi, lo := binary.BigEndian.Uint64(raw[:8]), binary.BigEndian.Uint64(raw[8:])
	out := make([]byte, len(prefix), len(prefix)+idChars)
	copy(out, prefix)
	for i := idChars - 1; i >= 0; i-- {
		shift := uint(5 * i)
		var v uint64
		switch {
		case shift >= 64:
			v = hi >> (shift - 64)
		case shift > 59:
			v = lo>>shift | hi<<(64-shift)
		default:
			v = lo >> shift
		}
		out = append(out, idAlphabet[v&31])
	}
	return string(out)
}

// NewExecutionID returns an unguessable execution ID: "x_" and 26 base32
// characters of 128 random bits.
func NewExecutionID() string { return randomID("x_") }

// NewWaitID returns a new Wait ID: "wt_" and 26 base32 characters, time
// first like a Work ID, so Waits in ID order are about in creation order.
func NewWaitID() string { return timeID("wt_") }

// NewArtifactID returns a new artifact ID: "a_" and 26 base32 characters,
// time first like a Work ID.
func NewArtifactID() string { return timeID("a_") }

// tokenBytes is the randomness of a toolbelt token.
const tokenBytes = 32

// NewToken returns a fresh toolbelt bearer token (256 random bits,
// unpadded base64url) and its TokenHash. Store only the hash: the token
// itself goes to the execution and nowhere else.
func NewToken() (token, hash string) {
	var raw [tokenBytes]byte
	_, _ = rand.Read(raw[:])
	token = base64.RawURLEncoding.EncodeToString(raw[:])
	return token, TokenHash(token)
}

// TokenHash is the hex SHA-256 of token: what the store keeps of it, so a
// copy of the store lets nobody act as a running execution.
func TokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// isHexDigest reports whether s is a lower-case hex SHA-256.
func isHexDigest(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
