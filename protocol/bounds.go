package protocol

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// Bounds of what the host stores and answers. Every answer that can grow
// (kv.list, state.events, state.work_events, the management API's pages of
// Events) is paged by count and by bytes, and an item that could not fit an
// answer of its own is refused when it is written, so no line the host sends
// comes near MaxMessageBytes: the largest single item (a KV value at
// MaxValueBytes, 4/3 larger in base64, with a key at MaxKeyBytes) takes under
// 11 MiB, and a page of several items stays within MaxPageBytes.
const (
	// MaxPageBytes is the byte budget of one page of an answer: a page stops
	// before the item that would take its items past it, but always holds
	// at least one item when one follows its cursor.
	MaxPageBytes = 4 << 20
	// MaxValueBytes caps one KV value, in raw bytes (before base64).
	MaxValueBytes = 8 << 20
	// MaxPayloadBytes caps one Event payload: its schema and its data as
	// JSON text, U+2028 and U+2029 counted as the six-byte escapes a line
	// carries them as.
	MaxPayloadBytes = 8 << 20
	// MaxKeyBytes caps each name a write carries: a KV namespace and key,
	// and an Event's scope, source, delivery ID, type and parent.
	MaxKeyBytes = 4 << 10
)

// PageBudget is the one paging rule every list the host answers follows:
// at most a count of items, and, past the first item, at most MaxPageBytes
// of them as their answer encodes them. The zero value holds nothing; make
// one with NewPageBudget.
type PageBudget struct {
	limit, items, bytes int
}

// NewPageBudget starts a page of at most limit items; limit <= 0 or over
// max means max.
func NewPageBudget(limit, max int) PageBudget {
	if limit <= 0 || limit > max {
		limit = max
	}
	return PageBudget{limit: limit}
}

// Add counts an item of size bytes (as KVItemSize or Event.WireSize
// measure it) into the page and reports whether it fits. When it does not,
// the page is full: answer it, and say more follows.
func (p *PageBudget) Add(size int) bool {
	if p.items >= p.limit || (p.items > 0 && p.bytes+size > MaxPageBytes) {
		return false
	}
	p.items++
	p.bytes += size
	return true
}

// Limit is the most items the page holds.
func (p *PageBudget) Limit() int { return p.limit }

// Full reports whether the page holds its count of items, so no item joins
// it whatever its size: a reader need not measure the next one.
func (p *PageBudget) Full() bool { return p.items >= p.limit }

// kvItemOverhead is an item's JSON without its key, value and version, with
// the comma that separates it from the next.
const kvItemOverhead = len(`{"key":"","value":"","version":""},`)

// KVItemSize is the most bytes a KV item of key and a value of valueLen
// bytes takes in a kv.list answer's line: the key as a JSON string, the value
// in base64, its version.
func KVItemSize(key string, valueLen int) int {
	return kvItemOverhead + jsonStringLen(key) + (valueLen+2)/3*4 + 32
}

// eventOverhead is an Event's JSON without its variable parts, with the
// comma that separates it from the next, and room for the largest sequence,
// depth and time.
const eventOverhead = len(`{"id":"","sequence":,"scope_id":"","source":"","type":"","delivery_id":"","parent":"","root":"","depth":,"time":"","payload":{"schema":"","data":},"works":[]},`) +
	20 + 20 + len("2006-01-02T15:04:05.999999999Z07:00")

// WireSize is the most bytes e takes in an answer's line: what a page of
// Events counts it as.
func (e Event) WireSize() int {
	n := eventOverhead + PayloadSize(e.Payload)
	for _, s := range [...]string{e.ID, e.Scope, e.Source, e.Type, e.DeliveryID, e.Parent, e.Root} {
		n += jsonStringLen(s)
	}
	for _, w := range e.Works {
		n += jsonStringLen(w) + 3
	}
	return n
}

// PayloadSize is a payload's size as MaxPayloadBytes bounds it: its schema
// and its data as JSON text, each U+2028 and U+2029 counted as the six-byte
// escape a line carries it as.
func PayloadSize(p Payload) int {
	return jsonStringLen(p.Schema) + len(p.Data) + 3*(bytes.Count(p.Data, lineSep)+bytes.Count(p.Data, paraSep))
}

var (
	lineSep = []byte("\u2028")
	paraSep = []byte("\u2029")
)

// jsonStringLen is the most bytes s takes as a JSON string's contents on a
// line: a quote or backslash is escaped in two bytes, another control
// character, U+2028 or U+2029 in six, and an invalid byte becomes U+FFFD's
// three.
func jsonStringLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				n += 2
			case c < 0x20:
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 3
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// CheckBounds refuses a kv.commit batch that holds anything an answer could
// not carry: a value over MaxValueBytes, a payload over MaxPayloadBytes, a
// name over MaxKeyBytes. It is ErrTooLarge, and says which part and the
// bound; it never quotes the oversized part. Every host judges a batch by it
// first (KVRules.Check); an SDK may call it before sending.
func CheckBounds(p KVCommitParams) error {
	for i, e := range p.Emissions {
		if err := checkEmissionBounds(i, e); err != nil {
			return err
		}
	}
	for i, c := range p.Checks {
		if err := checkNames("check", i, c.Namespace, c.Key); err != nil {
			return err
		}
	}
	for i, w := range p.Puts {
		if err := checkNames("put", i, w.Namespace, w.Key); err != nil {
			return err
		}
		if len(w.Value) > MaxValueBytes {
			return Errorf(ErrTooLarge, "put %d (%s): a value of %d bytes is over the %d-byte bound: split it across keys, or write it as an artifact",
				i, w.Namespace, len(w.Value), MaxValueBytes)
		}
	}
	for i, d := range p.Deletes {
		if err := checkNames("delete", i, d.Namespace, d.Key); err != nil {
			return err
		}
	}
	return nil
}

// checkNames refuses a namespace or key over MaxKeyBytes; the namespace is
// named in the message only when it fits.
func checkNames(what string, i int, ns, key string) error {
	if len(ns) > MaxKeyBytes {
		return Errorf(ErrTooLarge, "%s %d: a namespace of %d bytes is over the %d-byte bound for a name", what, i, len(ns), MaxKeyBytes)
	}
	if len(key) > MaxKeyBytes {
		return Errorf(ErrTooLarge, "%s %d (%s): a key of %d bytes is over the %d-byte bound: use a shorter key, or a digest of it",
			what, i, ns, len(key), MaxKeyBytes)
	}
	return nil
}

// checkEmissionBounds refuses an Event whose names or payload are over
// their bounds: emission i of a batch, or (i < 0) the one event.accept
// derives.
func checkEmissionBounds(i int, e Emission) error {
	what := "the Event"
	if i >= 0 {
		what = "emission " + strconv.Itoa(i)
	}
	names := [...]struct{ field, value string }{
		{"scope", e.Scope}, {"source", e.Source}, {"delivery_id", e.DeliveryID}, {"type", e.Type}, {"parent", e.Parent},
	}
	for _, n := range names {
		if len(n.value) > MaxKeyBytes {
			return Errorf(ErrTooLarge, "%s: its %s of %d bytes is over the %d-byte bound for a name", what, n.field, len(n.value), MaxKeyBytes)
		}
	}
	if size := PayloadSize(e.Payload); size > MaxPayloadBytes {
		return Errorf(ErrTooLarge, "%s (%s/%s): a payload of %d bytes is over the %d-byte bound: keep large data in an artifact and name it in the payload",
			what, e.Source, e.DeliveryID, size, MaxPayloadBytes)
	}
	return nil
}
