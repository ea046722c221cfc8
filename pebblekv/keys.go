package pebblekv

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Family bytes: the first byte of every key. See the package doc's table.
const (
	famKV     byte = 'k'
	famEvent  byte = 'e'
	famID     byte = 'i'
	famScope  byte = 's'
	famWork   byte = 'w'
	famCausal byte = 'c'
	famRecord byte = 'r'
	famMeta   byte = 'm'

	// The typed records of routing (work.go, timers.go, routing.go) and
	// their indexes.
	famWorkRec     byte = 'W'
	famWorkByState byte = 'a'
	famWorkByScope byte = 'o'
	famWorkScoped  byte = 'q'
	famWorkOpenKey byte = 'y'
	famWorkKeyKind byte = 'h'
	famWorkInput   byte = 'n'
	famWorkInputID byte = 'u'
	famTimerRec    byte = 'T'
	famTimerDue    byte = 't'
	famRouteRec    byte = 'R'
	famPending     byte = 'p'

	// Reconcile's records (observations.go).
	famObservation byte = 'O'
	famObsConflict byte = 'X'
	famCheckpoint  byte = 'K'

	// The records of running Work (executions.go, waits.go, opresults.go,
	// artifacts.go) and their indexes.
	famExecRec      byte = 'E'
	famExecByWork   byte = 'x'
	famExecRunning  byte = 'g'
	famWaitRec      byte = 'V'
	famWaitActive   byte = 'v'
	famWaitDue      byte = 'd'
	famOpResult     byte = 'P'
	famArtifactRec  byte = 'A'
	famArtifactExec byte = 'f'
	famArtifactWork byte = 'F'
)

// Meta keys, under famMeta. The store writes each itself; none is reachable
// from an extension's namespace or key.
var (
	metaFormat   = []byte{famMeta, 'f', 'o', 'r', 'm', 'a', 't'}
	metaSeq      = []byte{famMeta, 's', 'e', 'q'}
	metaKVLayout = []byte{famMeta, 'k', 'v', 'l', 'a', 'y', 'o', 'u', 't', 0}
	metaRouteCur = []byte{famMeta, 'r', 'o', 'u', 't', 'e', 'c', 'u', 'r', 's', 'o', 'r'}
)

// appendString appends s length-prefixed, so whatever follows it can never
// be read as part of s.
func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendSeq appends seq as 8 bytes big-endian.
func appendSeq(b []byte, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(b, seq)
}

// kvPrefix is the prefix of every key of namespace ns.
func kvPrefix(ns string) []byte {
	return appendString(append(make([]byte, 0, 2+len(ns)), famKV), ns)
}

// kvKey is the key of ns/key.
func kvKey(ns, key string) []byte {
	return append(appendString(append(make([]byte, 0, 2+len(ns)+len(key)), famKV), ns), key...)
}

// eventKey is the log key of seq.
func eventKey(seq uint64) []byte {
	return appendSeq(append(make([]byte, 0, 9), famEvent), seq)
}

// idKey is the ID index key of an event ID.
func idKey(id string) []byte {
	return append(append(make([]byte, 0, 1+len(id)), famID), id...)
}

// indexPrefix is the prefix of one scope's or one Work's index entries.
func indexPrefix(fam byte, name string) []byte {
	return appendString(append(make([]byte, 0, 2+len(name)+8), fam), name)
}

// indexKey is the index entry naming seq under one scope or Work.
func indexKey(fam byte, name string, seq uint64) []byte {
	return appendSeq(indexPrefix(fam, name), seq)
}

// causalKey is the counter of Events derived in root's chain in the minute
// holding t.
func causalKey(root string, t time.Time) []byte {
	minute := t.Unix() / 60
	if t.Unix() < 0 && t.Unix()%60 != 0 {
		minute-- // floor, not truncation, before 1970
	}
	b := appendString(append(make([]byte, 0, 2+len(root)+8), famCausal), root)
	return binary.BigEndian.AppendUint64(b, uint64(minute)^(1<<63))
}

// recordPrefix is the prefix of one kind's records.
func recordPrefix(kind string) []byte {
	return appendString(append(make([]byte, 0, 2+len(kind)), famRecord), kind)
}

// recordKey is the key of one record.
func recordKey(kind, id string) []byte {
	return append(recordPrefix(kind), id...)
}

// kvLayoutKey is the key of ext's recorded KV layout version.
func kvLayoutKey(ext string) []byte {
	return append(append(make([]byte, 0, len(metaKVLayout)+len(ext)), metaKVLayout...), ext...)
}

// famKey is a key of family fam made of length-prefixed strings, then a raw
// last field: the shape of every typed record's index.
func famKey(fam byte, last string, fields ...string) []byte {
	n := 1 + len(last)
	for _, f := range fields {
		n += len(f) + binary.MaxVarintLen64
	}
	b := append(make([]byte, 0, n), fam)
	for _, f := range fields {
		b = appendString(b, f)
	}
	return append(b, last...)
}

// appendTime appends t so that byte order is time order: Unix seconds
// sign-flipped, 8 bytes big-endian, then nanoseconds, 4 bytes big-endian.
func appendTime(b []byte, t time.Time) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(t.Unix())^(1<<63))
	return binary.BigEndian.AppendUint32(b, uint32(t.Nanosecond()))
}

// timeLen is the length appendTime appends.
const timeLen = 12

// readTime decodes what appendTime appended.
func readTime(b []byte) time.Time {
	sec := int64(binary.BigEndian.Uint64(b) ^ (1 << 63))
	return time.Unix(sec, int64(binary.BigEndian.Uint32(b[8:]))).UTC()
}

// prefixEnd returns the smallest key greater than every key starting with
// prefix. Every prefix here starts with a family byte below 0xff, so one
// always exists.
func prefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	panic(fmt.Sprintf("pebblekv: no key follows prefix %x", prefix))
}

// seqSuffix decodes the sequence number a key ends with.
func seqSuffix(key []byte) (uint64, error) {
	if len(key) < 8 {
		return 0, fmt.Errorf("pebblekv: key %x is too short to end in a sequence", key)
	}
	return binary.BigEndian.Uint64(key[len(key)-8:]), nil
}
