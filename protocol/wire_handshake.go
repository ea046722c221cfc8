package protocol

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	json "github.com/go-json-experiment/json"
)

// A fresh extension process reads initialize and configure before anything
// else, and json's first decoding of a type is mostly reflection: building
// the field tables of InitializeParams and its maps took about 190 µs of a
// start, ConfigureParams' about 60, and encoding ConfigureResult about 30,
// each on the path between the host's request and the extension's answer.
// The codecs here read and write the shapes every encoder sends directly,
// as json does; anything they are not sure of (an escaped, repeated,
// unknown or case-variant name, a null, an escaped string, a number with a
// fraction or exponent, a repeated map key) goes to json, which accepts or
// refuses it as it always did. Tests and fuzzers hold them to json.

// UnmarshalJSONOnePass decodes initialize's params from the JSON object
// data, as json.Unmarshal would. Only a zero p is decoded directly: into
// anything else json.Unmarshal merges.
func (p *InitializeParams) UnmarshalJSONOnePass(data []byte) error {
	if isZero(p) {
		var v InitializeParams
		if v.decode(data) {
			*p = v
			return nil
		}
	}
	return json.Unmarshal(data, p)
}

// decode reads the params directly; it reports false, with p perhaps
// half-filled, when it leaves them to json.
func (p *InitializeParams) decode(b []byte) bool {
	i := readObject(b, skipSpace(b, 0), func(name []byte, i int) int {
		switch string(name) {
		case "protocol_versions":
			p.ProtocolVersions, i = readInts(b, i)
		case "host":
			i = readHostInfo(b, i, &p.Host)
		case "state_dir":
			p.StateDir, i = readString(b, i)
		case "config_dir":
			p.ConfigDir, i = readString(b, i)
		case "executor_dirs":
			p.ExecutorDirs, i = readStringMap(b, i)
		case "resource_dirs":
			p.ResourceDirs, i = readStringMap(b, i)
		case "container_dirs":
			p.ContainerDirs, i = readStringMap(b, i)
		case "container_host":
			p.ContainerHost, i = readString(b, i)
		case "artifact_window":
			var n int64
			n, i = readInt(b, i)
			p.ArtifactWindow = int(n)
		default:
			return -1
		}
		return i
	})
	return i >= 0 && skipSpace(b, i) == len(b)
}

func readHostInfo(b []byte, i int, h *HostInfo) int {
	return readObject(b, i, func(name []byte, i int) int {
		switch string(name) {
		case "name":
			h.Name, i = readString(b, i)
		case "version":
			h.Version, i = readString(b, i)
		default:
			return -1
		}
		return i
	})
}

// UnmarshalJSONOnePass decodes configure's params from the JSON object
// data, as json.Unmarshal would. Configs are copies that p owns. Only a zero
// p is decoded directly: into anything else json.Unmarshal merges.
func (p *ConfigureParams) UnmarshalJSONOnePass(data []byte) error {
	if isZero(p) {
		var v ConfigureParams
		if v.decode(data) {
			*p = v
			return nil
		}
	}
	return json.Unmarshal(data, p)
}

// decode reads the params directly; it reports false, with p perhaps
// half-filled, when it leaves them to json.
func (p *ConfigureParams) decode(b []byte) bool {
	i := readObject(b, skipSpace(b, 0), func(name []byte, i int) int {
		switch string(name) {
		case "generation":
			i = readGeneration(b, i, &p.Generation)
		case "entries":
			p.Entries, i = readEntries(b, i)
		case "connections":
			p.Connections = []Connection{}
			i = readArray(b, i, func(i int) int {
				p.Connections = append(p.Connections, Connection{})
				return readConnection(b, i, &p.Connections[len(p.Connections)-1])
			})
		case "disabled":
			p.Disabled, i = readEntries(b, i)
		case "public_url":
			p.PublicURL, i = readString(b, i)
		case "dry_run":
			p.DryRun, i = readBool(b, i)
		case "kv":
			i = readKVLayout(b, i, &p.KV)
		default:
			return -1
		}
		return i
	})
	return i >= 0 && skipSpace(b, i) == len(b)
}

func readGeneration(b []byte, i int, g *Generation) int {
	return readObject(b, i, func(name []byte, i int) int {
		switch string(name) {
		case "id":
			g.ID, i = readInt(b, i)
		case "hash":
			g.Hash, i = readString(b, i)
		default:
			return -1
		}
		return i
	})
}

func readKVLayout(b []byte, i int, kv *KVLayout) int {
	return readObject(b, i, func(name []byte, i int) int {
		var n int64
		switch string(name) {
		case "stored":
			n, i = readInt(b, i)
			kv.Stored = int(n)
		case "declared":
			n, i = readInt(b, i)
			kv.Declared = int(n)
		default:
			return -1
		}
		return i
	})
}

// readEntries reads an array of entries; [] is an empty slice, as json
// makes it.
func readEntries(b []byte, i int) ([]Entry, int) {
	es := []Entry{}
	end := readArray(b, i, func(i int) int {
		es = append(es, Entry{})
		return readEntry(b, i, &es[len(es)-1])
	})
	return es, end
}

func readEntry(b []byte, i int, e *Entry) int {
	return readObject(b, i, func(name []byte, i int) int {
		switch string(name) {
		case "scope":
			e.Scope, i = readString(b, i)
		case "type":
			e.Type, i = readString(b, i)
		case "name":
			e.Name, i = readString(b, i)
		case "config":
			e.Config, i = readRaw(b, i)
		case "connection":
			e.Connection, i = readString(b, i)
		case "binding_connections":
			e.BindingConnections, i = readStrings(b, i)
		default:
			return -1
		}
		return i
	})
}

func readConnection(b []byte, i int, c *Connection) int {
	return readObject(b, i, func(name []byte, i int) int {
		switch string(name) {
		case "name":
			c.Name, i = readString(b, i)
		case "type":
			c.Type, i = readString(b, i)
		case "config":
			c.Config, i = readRaw(b, i)
		case "secrets":
			c.Secrets, i = readStrings(b, i)
		default:
			return -1
		}
		return i
	})
}

// AppendJSON appends the result as JSON to b, byte for byte what
// json.Marshal writes, and fails as json.Marshal fails.
func (r ConfigureResult) AppendJSON(b []byte) ([]byte, error) {
	start := len(b)
	w := objectWriter{b: b, ok: true}
	w.open()
	w.objects("sources", len(r.Sources), func(i int) {
		s := &r.Sources[i]
		w.str("name", s.Name)
		w.optStrs("families", s.Families)
		w.flag("reconcile", s.Reconcile)
	})
	w.optStrs("webhook_paths", r.WebhookPaths)
	w.close()
	if !w.ok {
		return appendMarshal(b[:start], r)
	}
	return w.b, nil
}

// readObject is walkObject for an object whose members are each read
// once: member reads the value of a name it knows and returns -1 for any
// other. A name that comes twice (json refuses it) leaves the object to
// json. The objects here have at most nine members; a short list of the
// names seen, slices of b, beats a map.
func readObject(b []byte, i int, member func(name []byte, i int) int) int {
	var seen [12][]byte
	n := 0
	return walkObject(b, i, func(name []byte, i int) int {
		if n == len(seen) {
			return -1
		}
		for _, s := range seen[:n] {
			if bytes.Equal(s, name) {
				return -1
			}
		}
		seen[n] = name
		n++
		return member(name, i)
	})
}

// readArray reads the array at b[i], calling each with the index of every
// element, which each reads, returning the index past it or -1. It returns
// the index past the array, or -1.
func readArray(b []byte, i int, each func(i int) int) int {
	if i >= len(b) || b[i] != '[' {
		return -1
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1
	}
	for {
		if i = each(i); i < 0 {
			return -1
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return -1
		}
		if b[i] == ']' {
			return i + 1
		}
		if b[i] != ',' {
			return -1
		}
		i = skipSpace(b, i+1)
	}
}

// readStrings reads an array of plain strings (readString's); [] is an
// empty slice, as json makes it.
func readStrings(b []byte, i int) ([]string, int) {
	ss := []string{}
	end := readArray(b, i, func(i int) int {
		s, end := readString(b, i)
		ss = append(ss, s)
		return end
	})
	return ss, end
}

// readInts reads an array of integers (readInt's); [] is an empty slice.
func readInts(b []byte, i int) ([]int, int) {
	xs := []int{}
	end := readArray(b, i, func(i int) int {
		x, end := readInt(b, i)
		xs = append(xs, int(x))
		return end
	})
	return xs, end
}

// readInt returns the integer at b[i] and the index past it, or -1 unless
// it is written as json writes one: an optional minus, no leading zero, no
// fraction or exponent, not -0, and at most nine digits, so it fits an int
// on every platform.
func readInt(b []byte, i int) (int64, int) {
	end := number(b, i)
	if end < 0 {
		return 0, -1
	}
	text := b[i:end]
	digits := text
	if text[0] == '-' {
		digits = text[1:]
	}
	if len(digits) > 9 || string(text) == "-0" {
		return 0, -1
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, -1
		}
	}
	n, err := strconv.ParseInt(string(text), 10, 64)
	if err != nil {
		return 0, -1
	}
	return n, end
}

// readBool returns the boolean at b[i] and the index past it, or -1.
func readBool(b []byte, i int) (bool, int) {
	if end := literal(b, i, "true"); end >= 0 {
		return true, end
	}
	return false, literal(b, i, "false")
}

// readRaw returns a copy of the JSON value at b[i] as it stands, as json
// keeps a jsontext.Value, and the index past it; -1 for null (json's
// business) or a value the scanner is not sure of.
func readRaw(b []byte, i int) ([]byte, int) {
	if i >= len(b) || b[i] == 'n' {
		return nil, -1
	}
	s := valueScanner{b: b}
	end := s.value(i)
	if end < 0 {
		return nil, -1
	}
	return append([]byte(nil), b[i:end]...), end
}

// readStringMap reads an object of plain strings; {} is an empty map, as
// json makes it. A key with an escape or a control character, one that is
// not UTF-8, or one that repeats (json refuses that) is left to json.
func readStringMap(b []byte, i int) (map[string]string, int) {
	m := map[string]string{}
	end := walkObject(b, i, func(name []byte, i int) int {
		if !plainString(name) {
			return -1
		}
		if _, dup := m[string(name)]; dup {
			return -1
		}
		v, end := readString(b, i)
		m[string(name)] = v
		return end
	})
	return m, end
}

// plainString reports whether s, the bytes between a string's quotes, is
// valid UTF-8 with no control character, quote or backslash.
func plainString(s []byte) bool {
	ascii := true
	for _, c := range s {
		if c >= utf8.RuneSelf {
			ascii = false
			continue
		}
		if !plainByte[c] {
			return false
		}
	}
	return ascii || utf8.Valid(s)
}

// UnmarshalJSONOnePass decodes shutdown's params: an empty object
// directly, anything else (a member, which json ignores, or invalid JSON,
// which it refuses) as json.Unmarshal does.
func (p *ShutdownParams) UnmarshalJSONOnePass(data []byte) error {
	if i := skipSpace(data, 0); i < len(data) && data[i] == '{' {
		if j := skipSpace(data, i+1); j < len(data) && data[j] == '}' && skipSpace(data, j+1) == len(data) {
			return nil
		}
	}
	return json.Unmarshal(data, p)
}

// AppendJSON appends the result as json.Marshal writes it: {}.
func (ShutdownResult) AppendJSON(b []byte) ([]byte, error) { return append(b, '{', '}'), nil }
