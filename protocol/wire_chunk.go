package protocol

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"slices"
	"strconv"
	"sync"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// UnmarshalJSONOnePass decodes artifact.write's params from the JSON object
// data, as json.Unmarshal into a zero value would, reading the chunk once:
// the base64 of "data" is decoded straight from data into a buffer of its own
// (never aliasing data), and only the other members, a few dozen bytes, go
// through json.Unmarshal. json.Unmarshal would first scan the whole string
// to validate it and then decode it, a second pass over a chunk's 350 KB.
//
// The base64 alphabet holds no byte that needs escaping in a JSON string, so
// a chunk written as every JSON encoder writes it decodes here; anything
// else (an escape such as \/, a line break, unpadded base64, a repeated or
// missing "data", invalid JSON) is left to json.Unmarshal, which accepts or
// refuses it as it always did.
func (p *ArtifactWriteParams) UnmarshalJSONOnePass(data []byte) error {
	was := *p
	if p.unmarshalChunk(data) {
		return nil
	}
	*p = was
	return json.Unmarshal(data, p)
}

// AppendJSON appends the params as JSON to b, byte for byte what
// json.Marshal writes, with the chunk's base64 encoded straight into b by
// table, two characters per look-up: the encoder a caller frames requests
// with (the SDK's) then makes no buffer of its own for the chunk, and the
// base64 package's encoder writes it at about two thirds of this speed.
func (p ArtifactWriteParams) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"artifact_id":`...)
	b, err := jsontext.AppendQuote(b, p.Artifact)
	if err != nil {
		return b, err
	}
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, p.Offset, 10)
	b = append(b, `,"data":"`...)
	b = appendBase64(b, p.Data)
	return append(b, `"}`...), nil
}

// base64Pairs maps twelve bits to their two characters of the standard
// alphabet, the first in the low byte. It is built on first use: most
// processes never encode a chunk.
var base64Pairs = sync.OnceValue(func() *[4096]uint16 {
	t := new([4096]uint16)
	for i := range t {
		t[i] = uint16(base64Alphabet[i>>6]) | uint16(base64Alphabet[i&63])<<8
	}
	return t
})

const base64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// appendBase64 appends src in padded standard base64 to b.
func appendBase64(b, src []byte) []byte {
	n := (len(src) + 2) / 3 * 4
	b = slices.Grow(b, n)
	dst := b[len(b) : len(b)+n]
	pairs := base64Pairs()
	// Six bytes make eight characters; the eight-byte load needs two more
	// to read, which the last quanta leave to the loop after.
	for len(src) >= 8 {
		v := binary.BigEndian.Uint64(src)
		binary.LittleEndian.PutUint64(dst, uint64(pairs[v>>52&0xfff])|uint64(pairs[v>>40&0xfff])<<16|
			uint64(pairs[v>>28&0xfff])<<32|uint64(pairs[v>>16&0xfff])<<48)
		src, dst = src[6:], dst[8:]
	}
	for len(src) >= 3 {
		v := uint(src[0])<<16 | uint(src[1])<<8 | uint(src[2])
		hi, lo := pairs[v>>12], pairs[v&0xfff]
		dst[0], dst[1], dst[2], dst[3] = byte(hi), byte(hi>>8), byte(lo), byte(lo>>8)
		src, dst = src[3:], dst[4:]
	}
	switch len(src) {
	case 2:
		v := uint(src[0])<<8 | uint(src[1])
		dst[0], dst[1], dst[2], dst[3] = base64Alphabet[v>>10], base64Alphabet[v>>4&63], base64Alphabet[v<<2&63], '='
	case 1:
		v := uint(src[0])
		dst[0], dst[1], dst[2], dst[3] = base64Alphabet[v>>2], base64Alphabet[v<<4&63], '=', '='
	}
	return b[:len(b)+n]
}

// unmarshalChunk is UnmarshalJSONOnePass's one pass. It reports false, with
// p possibly half-filled, when it leaves the params to json.Unmarshal.
func (p *ArtifactWriteParams) unmarshalChunk(b []byte) bool {
	buf := restBuffers.Get().(*[]byte)
	defer putRestBuffer(buf)
	rest := append((*buf)[:0], '{') // every member but "data"
	var chunk []byte
	seen := false
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return false // no "data": json.Unmarshal's business
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		end := bytes.IndexByte(b[i+1:], '"')
		if end < 0 {
			return false
		}
		name := b[i+1 : i+1+end]
		if bytes.IndexByte(name, '\\') >= 0 {
			return false
		}
		member := i
		i = skipSpace(b, i+end+2)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		if string(name) == "data" {
			if seen || i >= len(b) || b[i] != '"' {
				return false
			}
			end := bytes.IndexByte(b[i+1:], '"')
			if end < 0 {
				return false
			}
			if chunk = decodeBase64(b[i+1 : i+1+end]); chunk == nil {
				return false
			}
			seen = true
			i += end + 2
		} else {
			next := skipValue(b, i)
			if next < 0 {
				return false
			}
			if len(rest) > 1 {
				rest = append(rest, ',')
			}
			rest = append(rest, b[member:next]...)
			i = next
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return false
		}
		if b[i] == '}' {
			break
		}
		if b[i] != ',' {
			return false
		}
		i = skipSpace(b, i+1)
	}
	if skipSpace(b, i+1) != len(b) || !seen {
		return false
	}
	rest = append(rest, '}')
	*buf = rest
	if json.Unmarshal(rest, p) != nil {
		return false
	}
	p.Data = chunk
	return true
}

// restBuffers hold the members other than "data" while they are decoded:
// json.Unmarshal keeps its input past the call, so a buffer on the stack
// would be one allocation per chunk.
var restBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

func putRestBuffer(b *[]byte) {
	if cap(*b) <= 4<<10 {
		restBuffers.Put(b)
	}
}

// decodeBase64 decodes padded standard base64 as json.Unmarshal does for a
// []byte, or returns nil for anything it would not take or that needs
// unescaping first (a byte outside the alphabet, a line break, which the
// base64 package skips but JSON does not allow raw, missing padding).
func decodeBase64(s []byte) []byte {
	if len(s)%4 != 0 {
		return nil
	}
	if len(s) == 0 {
		return []byte{}
	}
	n := len(s) / 4 * 3
	if s[len(s)-1] == '=' {
		n--
		if s[len(s)-2] == '=' {
			n--
		}
	}
	// The last quantum, which may be padded, is decoded on the side, so the
	// chunk's buffer is exactly its size.
	body, tail := s[:len(s)-4], s[len(s)-4:]
	out := make([]byte, n)
	got := len(body) / 4 * 3
	if !decodeQuanta(out[:got], body) {
		return nil
	}
	var last [3]byte
	m, err := base64.StdEncoding.Decode(last[:], tail)
	if err != nil || got+m != n {
		return nil
	}
	copy(out[got:], last[:m])
	return out
}

// base64Pairs12 maps two base64 characters, read as a little-endian
// uint16 (the first in the low byte), to their twelve bits, and any pair
// with a byte outside the alphabet to a value with badPair set. Built on
// first use: 128 KiB that a process which never receives a chunk does not
// pay for at start, and of which a chunk touches only the 4096 alphabet
// pairs, about 20 KiB of cache lines.
var base64Pairs12 = sync.OnceValue(func() *[1 << 16]uint16 {
	var one [256]uint16
	for c := range one {
		one[c] = badPair
	}
	for v, c := range []byte(base64Alphabet) {
		one[c] = uint16(v)
	}
	t := new([1 << 16]uint16)
	for i := range t {
		hi, lo := one[i&0xff], one[i>>8]
		if (hi|lo)&badPair != 0 {
			t[i] = badPair
		} else {
			t[i] = hi<<6 | lo
		}
	}
	return t
})

const badPair = 0x8000

// decodeQuanta decodes src, whole quanta of the standard alphabet with no
// padding, into dst (len(src)/4*3 bytes), and reports whether every
// character was one of the alphabet. Sixteen characters are eight pair
// look-ups, each a two-byte load and a table load, one validity check on
// the OR of all eight and two eight-byte stores: the base64 package's
// decoder reads the chunk at about two fifths of this speed, a table of one
// character per look-up at about four fifths.
func decodeQuanta(dst, src []byte) bool {
	if len(src)/4*3 != len(dst) {
		return false
	}
	t := base64Pairs12()
	// Each eight-byte store writes two bytes past its six, which the next
	// store overwrites; the last quanta, with no room past them, are left
	// to the loop after.
	i, j := 0, 0
	for ; i+16 <= len(src) && j+14 <= len(dst); i, j = i+16, j+12 {
		s, d := src[i:i+16:i+16], dst[j:j+14:j+14]
		a0, a1 := t[binary.LittleEndian.Uint16(s[0:])], t[binary.LittleEndian.Uint16(s[2:])]
		a2, a3 := t[binary.LittleEndian.Uint16(s[4:])], t[binary.LittleEndian.Uint16(s[6:])]
		b0, b1 := t[binary.LittleEndian.Uint16(s[8:])], t[binary.LittleEndian.Uint16(s[10:])]
		b2, b3 := t[binary.LittleEndian.Uint16(s[12:])], t[binary.LittleEndian.Uint16(s[14:])]
		if (a0|a1|a2|a3|b0|b1|b2|b3)&badPair != 0 {
			return false
		}
		binary.BigEndian.PutUint64(d, uint64(a0)<<52|uint64(a1)<<40|uint64(a2)<<28|uint64(a3)<<16)
		binary.BigEndian.PutUint64(d[6:], uint64(b0)<<52|uint64(b1)<<40|uint64(b2)<<28|uint64(b3)<<16)
	}
	src, dst = src[i:], dst[j:]
	for len(src) >= 4 && len(dst) >= 3 {
		a, b := t[binary.LittleEndian.Uint16(src)], t[binary.LittleEndian.Uint16(src[2:])]
		if (a|b)&badPair != 0 {
			return false
		}
		q := uint32(a)<<12 | uint32(b)
		dst[0], dst[1], dst[2] = byte(q>>16), byte(q>>8), byte(q)
		src, dst = src[4:], dst[3:]
	}
	return len(src) == 0 && len(dst) == 0
}

// skipSpace returns the index of the first byte from i that is not JSON
// whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value that begins at i, or
// -1 when it cannot find its end. It only delimits: json.Unmarshal checks
// what it delimited.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				end := skipString(b, i)
				if end < 0 {
					return -1
				}
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return i
}

// skipString returns the index just past the JSON string that begins at i,
// or -1 when it does not end.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}
