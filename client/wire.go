package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Directions of a WireEntry, as the host sees the line.
const (
	WireToExtension   = "host_to_ext"
	WireFromExtension = "ext_to_host"
)

// Kinds of a WireEntry.
const (
	WireRequest      = "request"
	WireNotification = "notification"
	WireAnswer       = "answer"
	WireError        = "error"
	// WireOther is a line that is none of the above (a batch, a line that
	// is not JSON-RPC): the wire tap shows what the peer sent.
	WireOther = "other"
)

// MaxWirePage bounds the entries of one page of the wire tap.
const MaxWirePage = 256

// WireEntry is one JSON-RPC line between the host and an extension, as the
// daemon's wire tap recorded it.
type WireEntry struct {
	// Seq numbers the lines of one extension from 1, across its restarts.
	Seq       uint64    `json:"seq"`
	Time      time.Time `json:"time"`
	Direction string    `json:"direction"`
	Kind      string    `json:"kind"`
	// Method is the request's, or for an answer the method of the request
	// it answers when the tap saw it.
	Method string `json:"method,omitempty"`
	// ID is the id's JSON text (7, "a"), empty for a notification.
	ID string `json:"id,omitempty"`
	// Size is the whole line's length in bytes, without its newline.
	Size int `json:"size"`
	// LatencyMicros is, for an answer, the time since its request, in
	// microseconds.
	LatencyMicros int64 `json:"latency_us,omitzero"`
	// Message is the line's text, at most a few KiB of it (Cut says it was
	// cut); the result of a secret.resolve answer is replaced (Redacted).
	Message  string `json:"message"`
	Cut      bool   `json:"cut,omitzero"`
	Redacted bool   `json:"redacted,omitzero"`
}

// WireQuery asks for the entries after a sequence number.
type WireQuery struct {
	After uint64
	// Limit bounds the entries (1..MaxWirePage; 0 means the most).
	Limit int
	// Wait, when no entry follows After, waits up to this long (at most
	// MaxWait) for one.
	Wait time.Duration
}

// WirePage is one page of an extension's wire tap.
type WirePage struct {
	Extension string      `json:"extension"`
	Entries   []WireEntry `json:"entries"`
	// Next is the cursor to ask from next (the last entry's Seq, or After
	// when the page is empty).
	Next uint64 `json:"next"`
	// More says entries after Next are already held.
	More bool `json:"more"`
	// Oldest is the first Seq the tap still holds: entries between the
	// asked After and Oldest were dropped from its bounded ring.
	Oldest uint64 `json:"oldest"`
	// Latest is the last Seq the tap has numbered (0 before its first).
	// Less than the asked After means the numbering started over: the
	// daemon restarted since the cursor was taken.
	Latest uint64 `json:"latest"`
}

// Wire reads one page of the recent JSON-RPC traffic of an extension (the
// operator's wire tap).
func (c *Client) Wire(ctx context.Context, name string, q WireQuery) (WirePage, error) {
	v := url.Values{}
	v.Set("after", strconv.FormatUint(q.After, 10))
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Wait > 0 {
		v.Set("wait", waitParam(q.Wait))
	}
	var p WirePage
	return p, c.do(ctx, http.MethodGet, "/v1/extensions/"+url.PathEscape(name)+"/wire?"+v.Encode(), nil, &p)
}
