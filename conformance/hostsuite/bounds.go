package hostsuite

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
)

// boundsChecks are the checks of the size bounds: pages by bytes, and
// writes no answer could carry refused.
var boundsChecks = []check{
	{"KVListPagesByBytes", kvListPagesByBytes, nil},
	{"KVCommitOverItsBoundsIsTooLargeAndAppliesNothing", kvCommitOverBoundsIsTooLarge, nil},
}

// bigValues is how many values of bigValueBytes kvListPagesByBytes writes:
// more than one page's budget of them.
const (
	bigValues     = 6
	bigValueBytes = 1 << 20
)

func kvListPagesByBytes(x *ext) {
	ns := Extension + ".big"
	for i := 0; i < bigValues; i += 2 {
		x.mustCommit("seed", protocol.KVCommitParams{Puts: []protocol.KVPut{
			{Namespace: ns, Key: fmt.Sprintf("k%d", i), Value: bytes.Repeat([]byte{'v'}, bigValueBytes)},
			{Namespace: ns, Key: fmt.Sprintf("k%d", i+1), Value: bytes.Repeat([]byte{'v'}, bigValueBytes)},
		}})
	}
	var keys []string
	after, pages := "", 0
	for {
		res, err := jsonrpc.Invoke(x.ctx, x.conn, protocol.KVList, protocol.KVListParams{Namespace: ns, After: after})
		if err != nil {
			x.Fatalf("kv.list after %q: %v", after, err)
		}
		pages++
		size := 0
		for _, it := range res.Items {
			size += protocol.KVItemSize(it.Key, len(it.Value))
			keys = append(keys, it.Key)
			after = it.Key
		}
		if len(res.Items) == 0 || len(res.Items) > 1 && size > protocol.MaxPageBytes {
			x.Fatalf("page %d: %d items of %d bytes, want at least one and, past it, at most %d bytes", pages, len(res.Items), size, protocol.MaxPageBytes)
		}
		if !res.More {
			break
		}
	}
	if len(keys) != bigValues || pages < 2 {
		x.Errorf("listed %v in %d pages, want %d keys in at least two pages", keys, pages, bigValues)
	}
}

func kvCommitOverBoundsIsTooLarge(x *ext) {
	long := strings.Repeat("k", protocol.MaxKeyBytes+1)
	payload := []byte(`"` + strings.Repeat("p", protocol.MaxPayloadBytes) + `"`)
	cases := []struct {
		name string
		bad  func(p *protocol.KVCommitParams)
	}{
		{"a value over its bound", func(p *protocol.KVCommitParams) {
			p.Puts = append(p.Puts, protocol.KVPut{Namespace: Extension, Key: "big", Value: make([]byte, protocol.MaxValueBytes+1)})
		}},
		{"a key over its bound", func(p *protocol.KVCommitParams) { p.Puts = append(p.Puts, put(Extension, long, "x")) }},
		{"an emission's payload over its bound", func(p *protocol.KVCommitParams) {
			e := emission(Scope, "big", "")
			e.Payload.Data = payload
			p.Emissions = append(p.Emissions, e)
		}},
	}
	x.mustCommit("seed", seedBatch())
	for _, tc := range cases {
		p := goodBatch()
		tc.bad(&p)
		_, err := x.commit(p)
		x.wantCode(tc.name, err, protocol.ErrTooLarge)
		x.wantUntouched(tc.name)
	}
	x.wantAbsent("the refused value", Extension, "big")
	x.wantNew("the refused emission", emission(Scope, "big", ""))
	x.wantGoodBatchApplies()
}
