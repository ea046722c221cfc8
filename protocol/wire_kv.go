package protocol

import (
	"unicode/utf8"

	json "github.com/go-json-experiment/json"
)

// UnmarshalJSONOnePass decodes kv.commit's params from the JSON object
// data, as json.Unmarshal into a zero value would. A batch of checks, puts
// and deletes in the shape every encoder writes (each member once, strings
// without escapes, values in padded standard base64) is read in one pass
// without reflection: on the host it is the most frequent callback, and
// json.Unmarshal cost it a few microseconds a batch. Anything else
// (emissions, an escape, null, an empty list, an unknown or repeated member,
// invalid JSON) is left to json.Unmarshal, which accepts or refuses it as it
// always did. Only a zero p is decoded directly: into anything else
// json.Unmarshal merges.
func (p *KVCommitParams) UnmarshalJSONOnePass(data []byte) error {
	if p.Checks == nil && p.Puts == nil && p.Deletes == nil && p.Emissions == nil {
		var q KVCommitParams
		if q.unmarshalFlat(data) {
			*p = q
			return nil
		}
	}
	return json.Unmarshal(data, p)
}

// AppendJSON appends the params as JSON to b, byte for byte what
// json.Marshal writes, and fails as json.Marshal fails. Checks, puts and
// deletes are written here, each value's base64 straight into b; a batch
// with emissions goes to json.Marshal whole.
func (p KVCommitParams) AppendJSON(b []byte) ([]byte, error) {
	if len(p.Emissions) > 0 {
		return appendMarshal(b, p)
	}
	start := len(b)
	b = append(b, '{')
	b, ok := appendList(b, start, "checks", p.Checks, appendCheck)
	if ok {
		b, ok = appendList(b, start, "puts", p.Puts, appendPut)
	}
	if ok {
		b, ok = appendList(b, start, "deletes", p.Deletes, appendDelete)
	}
	if !ok {
		return appendMarshal(b[:start], p)
	}
	return append(b, '}'), nil
}

// appendList appends the member name of the object begun at start, list
// as a JSON array, each element as elem appends it; an empty list is left
// out (omitempty). false when an element cannot be written here.
func appendList[T any](b []byte, start int, name string, list []T, elem func([]byte, T) ([]byte, bool)) ([]byte, bool) {
	if len(list) == 0 {
		return b, true
	}
	if len(b) > start+1 {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	b = append(b, `":[`...)
	for i, v := range list {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = elem(b, v); !ok {
			return b, false
		}
	}
	return append(b, ']'), true
}

func appendCheck(b []byte, c KVCheck) ([]byte, bool) {
	b, ok := appendNamed(b, c.Namespace, c.Key)
	if ok && c.Version != "" {
		b = append(b, `,"version":`...)
		b, ok = appendString(b, c.Version)
	}
	if c.Absent {
		b = append(b, `,"absent":true`...)
	}
	return append(b, '}'), ok
}

func appendPut(b []byte, p KVPut) ([]byte, bool) {
	b, ok := appendNamed(b, p.Namespace, p.Key)
	b = append(b, `,"value":"`...)
	b = appendBase64(b, p.Value)
	return append(b, `"}`...), ok
}

func appendDelete(b []byte, d KVDelete) ([]byte, bool) {
	b, ok := appendNamed(b, d.Namespace, d.Key)
	return append(b, '}'), ok
}

// appendNamed opens a check, put or delete: its namespace and key, the
// object left open for the members after them.
func appendNamed(b []byte, namespace, key string) ([]byte, bool) {
	b = append(b, `{"namespace":`...)
	b, ok := appendString(b, namespace)
	if !ok {
		return b, false
	}
	b = append(b, `,"key":`...)
	return appendString(b, key)
}

// UnmarshalJSONOnePass decodes kv.commit's result from the JSON object
// data, as json.Unmarshal would: an extension decodes one per commit, and
// the versions of puts, strings without escapes, are read in one pass;
// anything else (emissions, an escape, null, an empty list, invalid JSON) is
// left to json.Unmarshal. Only a zero r is decoded directly: into anything
// else json.Unmarshal merges.
func (r *KVCommitResult) UnmarshalJSONOnePass(data []byte) error {
	if r.Versions == nil && r.Emissions == nil {
		var v KVCommitResult
		if v.unmarshalFlat(data) {
			*r = v
			return nil
		}
	}
	return json.Unmarshal(data, r)
}

// unmarshalFlat is the result's one pass: false, with r possibly
// half-filled, when it leaves the result to json.Unmarshal.
func (r *KVCommitResult) unmarshalFlat(b []byte) bool {
	s := kvScan{b: b}
	var versions bool
	i := s.members(skipSpace(b, 0), func(name []byte, i int) int {
		if string(name) != "versions" {
			return -1
		}
		return listOf(s, i, &versions, &r.Versions, func(i int) (string, int) {
			var v string
			var seen bool
			end := s.text(i, &v, &seen)
			return v, end
		})
	})
	return i >= 0 && skipSpace(b, i) == len(b)
}

// AppendJSON appends the result as JSON to b, byte for byte what
// json.Marshal writes, and fails as json.Marshal fails. The versions are
// written here; a result with emissions goes to json.Marshal whole.
func (r KVCommitResult) AppendJSON(b []byte) ([]byte, error) {
	if len(r.Emissions) > 0 {
		return appendMarshal(b, r)
	}
	start := len(b)
	b = append(b, '{')
	b, ok := appendList(b, start, "versions", r.Versions, appendString)
	if !ok {
		return appendMarshal(b[:start], r)
	}
	return append(b, '}'), nil
}

// kvScan reads the one-pass shape of kv.commit's params. Every method
// returns the index just past what it read, or -1 when the input is not in
// that shape and json.Unmarshal must judge it.
type kvScan struct{ b []byte }

// unmarshalFlat is UnmarshalJSONOnePass's one pass: false, with p possibly
// half-filled, when it leaves the params to json.Unmarshal.
func (p *KVCommitParams) unmarshalFlat(b []byte) bool {
	s := kvScan{b: b}
	var checks, puts, deletes bool
	i := s.members(skipSpace(b, 0), func(name []byte, i int) int {
		switch string(name) {
		case "checks":
			return listOf(s, i, &checks, &p.Checks, s.check)
		case "puts":
			return listOf(s, i, &puts, &p.Puts, s.put)
		case "deletes":
			return listOf(s, i, &deletes, &p.Deletes, s.delete)
		}
		return -1
	})
	return i >= 0 && skipSpace(b, i) == len(b)
}

// listOf reads the one list of a member into *dst, each element as elem
// reads it; a member seen before is left to json.Unmarshal.
func listOf[T any](s kvScan, i int, seen *bool, dst *[]T, elem func(int) (T, int)) int {
	if *seen {
		return -1
	}
	*seen = true
	return s.list(i, func(i int) int {
		v, end := elem(i)
		*dst = append(*dst, v)
		return end
	})
}

// members reads an object whose every member member reads, and returns the
// index past its closing brace. member gets the name and the index of the
// value, and returns the index past the value. An empty object is left to
// json.Unmarshal, which gives a zero value as this would; members are
// never empty here.
func (s kvScan) members(i int, member func(name []byte, i int) int) int {
	b := s.b
	if i >= len(b) || b[i] != '{' {
		return -1
	}
	for i = skipSpace(b, i+1); ; {
		start := i
		if i = s.str(i); i < 0 {
			return -1
		}
		name := b[start+1 : i-1]
		if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
			return -1
		}
		if i = member(name, skipSpace(b, i+1)); i < 0 {
			return -1
		}
		if i = skipSpace(b, i); i >= len(b) {
			return -1
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return i + 1
		default:
			return -1
		}
	}
}

// list reads a non-empty array whose every element elem reads.
func (s kvScan) list(i int, elem func(i int) int) int {
	b := s.b
	if i >= len(b) || b[i] != '[' {
		return -1
	}
	for i = skipSpace(b, i+1); ; {
		if i = elem(i); i < 0 {
			return -1
		}
		if i = skipSpace(b, i); i >= len(b) {
			return -1
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return i + 1
		default:
			return -1
		}
	}
}

// str reads a string without escapes or control characters, in valid
// UTF-8, and returns the index past its closing quote; its contents are
// b[i+1 : end-1].
func (s kvScan) str(i int) int {
	b := s.b
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	ascii := true
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			if !ascii && !utf8.Valid(b[i+1:j]) {
				return -1
			}
			return j + 1
		case c == '\\' || c < ' ':
			return -1
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return -1
}

// text reads a string into *dst.
func (s kvScan) text(i int, dst *string, seen *bool) int {
	if *seen {
		return -1
	}
	*seen = true
	end := s.str(i)
	if end < 0 {
		return -1
	}
	*dst = string(s.b[i+1 : end-1])
	return end
}

// check reads one KVCheck.
func (s kvScan) check(i int) (c KVCheck, end int) {
	var ns, key, version, absent bool
	end = s.members(i, func(name []byte, i int) int {
		switch string(name) {
		case "namespace":
			return s.text(i, &c.Namespace, &ns)
		case "key":
			return s.text(i, &c.Key, &key)
		case "version":
			return s.text(i, &c.Version, &version)
		case "absent":
			if absent {
				return -1
			}
			absent = true
			return s.boolean(i, &c.Absent)
		}
		return -1
	})
	return c, end
}

// put reads one KVPut, its value's base64 decoded straight from the line.
func (s kvScan) put(i int) (p KVPut, end int) {
	var ns, key, value bool
	end = s.members(i, func(name []byte, i int) int {
		switch string(name) {
		case "namespace":
			return s.text(i, &p.Namespace, &ns)
		case "key":
			return s.text(i, &p.Key, &key)
		case "value":
			if value {
				return -1
			}
			value = true
			past := s.str(i)
			if past < 0 || past-i == 2 {
				return -1
			}
			if p.Value = decodeBase64(s.b[i+1 : past-1]); p.Value == nil {
				return -1
			}
			return past
		}
		return -1
	})
	return p, end
}

// delete reads one KVDelete.
func (s kvScan) delete(i int) (d KVDelete, end int) {
	var ns, key bool
	end = s.members(i, func(name []byte, i int) int {
		switch string(name) {
		case "namespace":
			return s.text(i, &d.Namespace, &ns)
		case "key":
			return s.text(i, &d.Key, &key)
		}
		return -1
	})
	return d, end
}

// boolean reads true or false into *dst.
func (s kvScan) boolean(i int, dst *bool) int {
	b := s.b[i:]
	switch {
	case len(b) >= 4 && string(b[:4]) == "true":
		*dst = true
		return i + 4
	case len(b) >= 5 && string(b[:5]) == "false":
		*dst = false
		return i + 5
	}
	return -1
}
