// Package hello is the bundled example extension: an entry type whose
// entries send a heartbeat Event into their scope every few seconds, an
// operation that greets and counts greetings in its KV namespace (and
// records each greeting as an Event), and a doctor check. The open-conduit
// binary serves it (open-conduit extension-run hello); it is built only on
// the SDK, as a third party would build it.
package hello

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
)

// Name is the package's name.
const Name = "hello"

// Namespace is where greetings are counted, one key per name.
const Namespace = "hello.greetings"

// Families and their schemas.
const (
	Heartbeat       = "hello.heartbeat"
	Greeted         = "hello.greeted"
	HeartbeatSchema = "hello.heartbeat.v1"
	GreetedSchema   = "hello.greeted.v1"
)

// HeartbeatEvery is the heartbeat task's interval.
const HeartbeatEvery = 5 * time.Second

// GreetInput is hello.greet's input.
type GreetInput struct {
	Name string `json:"name" doc:"Who to greet."`
}

// Greeting is hello.greet's output.
type Greeting struct {
	Greeting string `json:"greeting"`
	// Count is how many times this name has been greeted, this one included.
	Count int `json:"count"`
}

// Beat is a heartbeat Event's data.
type Beat struct {
	Entry    string `json:"entry"`
	Beat     int    `json:"beat"`
	Greeting string `json:"greeting"`
}

// entries are the hello entries of the current configuration.
type entries struct {
	mu   sync.Mutex
	list []protocol.Entry
}

func (e *entries) set(list []protocol.Entry) {
	e.mu.Lock()
	e.list = list
	e.mu.Unlock()
}

func (e *entries) get() []protocol.Entry {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]protocol.Entry(nil), e.list...)
}

// Extension builds the hello extension.
func Extension() *sdk.Extension {
	var es entries
	x := sdk.New(Name, sdk.Version("0.2.0"), sdk.HostRun(),
		sdk.Title("Hello"), sdk.Summary("greets by name, counts greetings in its KV, and sends a heartbeat into its scopes")).
		EntryType(Name).
		Family(Heartbeat, sdk.Loss("a missed heartbeat is not sent again")).
		Family(Greeted, sdk.Loss("a greeting not recorded is not recorded later")).
		Schema(Heartbeat, 1).
		Schema(Greeted, 1).
		Operation("hello.greet", sdk.Handler(greet),
			sdk.Describe("greet someone by name"),
			sdk.Guidance("Call `hello.greet` with a name; the answer says how many times that name was greeted.")).
		Task("hello-heartbeat", HeartbeatEvery, func(ctx context.Context, h *sdk.Host) error { return heartbeat(ctx, h, es.get()) }).
		Check("hello-kv", kvCheck)
	x.Validate = validate
	x.Configure = func(_ context.Context, _ *sdk.Host, p protocol.ConfigureParams) (protocol.ConfigureResult, error) {
		es.set(p.Entries)
		return protocol.ConfigureResult{}, nil
	}
	return x
}

// EntryConfig is a hello entry's config.
type EntryConfig struct {
	// Greeting is the heartbeat's greeting (default "Hello").
	Greeting string `json:"greeting,omitempty"`
}

// validate checks a hello entry: only the fields EntryConfig has.
func validate(_ context.Context, p protocol.ValidateParams) (protocol.ValidateResult, error) {
	if p.Kind != protocol.ValidateExtension || p.Type != Name {
		return protocol.ValidateResult{}, protocol.Errorf(protocol.ErrInvalid, "hello checks only its %q entries", Name)
	}
	if len(p.Config) == 0 {
		return protocol.ValidateResult{}, nil
	}
	var c EntryConfig
	if err := json.Unmarshal(p.Config, &c, json.RejectUnknownMembers(true)); err != nil {
		return protocol.ValidateResult{}, protocol.Errorf(protocol.ErrInvalid,
			"a hello entry's config takes only \"greeting\" (a string)")
	}
	return protocol.ValidateResult{}, nil
}

func greet(ctx context.Context, a protocol.Authority, in GreetInput) (Greeting, error) {
	if in.Name == "" {
		return Greeting{}, protocol.Errorf(protocol.ErrInvalid, "name is empty: say who to greet")
	}
	h := sdk.HostFrom(ctx)
	var count int
	err := h.Update(ctx, Namespace, in.Name, func(old []byte, _ bool) ([]byte, error) {
		count, _ = strconv.Atoi(string(old))
		count++
		return []byte(strconv.Itoa(count)), nil
	})
	if err != nil {
		return Greeting{}, fmt.Errorf("counting the greeting: %w", err)
	}
	if a.Scope != "" {
		data, _ := json.Marshal(map[string]any{"name": in.Name, "count": count})
		// The request ID makes a retried call the same Event.
		id := sdk.CallRequestID(ctx)
		if id == "" {
			id = fmt.Sprintf("%s/%d", in.Name, count)
		}
		_, err := h.Commit(ctx, sdk.NewBatch().Emit(protocol.Emission{
			Scope: a.Scope, Source: Name, DeliveryID: "greet/" + id, Type: Greeted,
			Payload: protocol.Payload{Schema: GreetedSchema, Data: data},
		}))
		if err != nil {
			return Greeting{}, fmt.Errorf("recording the greeting: %w", err)
		}
	}
	return Greeting{Greeting: "Hello, " + in.Name + "!", Count: count}, nil
}

// heartbeat sends one Event into the scope of each entry, counting beats
// in KV in the same atomic batch.
func heartbeat(ctx context.Context, h *sdk.Host, es []protocol.Entry) error {
	for _, e := range es {
		key := e.Scope + "/" + e.Name
		cur, err := h.Get(ctx, Name+".beats", key)
		if err != nil {
			return err
		}
		n, _ := strconv.Atoi(string(cur.Value))
		n++
		var c EntryConfig
		_ = json.Unmarshal(e.Config, &c)
		if c.Greeting == "" {
			c.Greeting = "Hello"
		}
		data, _ := json.Marshal(Beat{Entry: e.Name, Beat: n, Greeting: c.Greeting})
		b := sdk.NewBatch()
		if cur.Found {
			b.Check(Name+".beats", key, cur.Version)
		} else {
			b.CheckAbsent(Name+".beats", key)
		}
		b.Put(Name+".beats", key, []byte(strconv.Itoa(n)))
		b.Emit(protocol.Emission{
			Scope: e.Scope, Source: Name + "/" + e.Scope + "/" + e.Name, DeliveryID: fmt.Sprintf("beat/%d", n), Type: Heartbeat,
			Payload: protocol.Payload{Schema: HeartbeatSchema, Data: data},
		})
		if _, err := h.Commit(ctx, b); err != nil {
			return fmt.Errorf("heartbeat for %s: %w", key, err)
		}
	}
	return nil
}

// kvCheck reads the extension's KV, which proves the host serves it.
func kvCheck(ctx context.Context, h *sdk.Host, _ bool) (string, error) {
	items, err := h.List(ctx, Namespace, "")
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", Namespace, err)
	}
	beats, err := h.List(ctx, Name+".beats", "")
	if err != nil {
		return "", fmt.Errorf("reading %s.beats: %w", Name, err)
	}
	total := 0
	for _, b := range beats {
		n, _ := strconv.Atoi(string(b.Value))
		total += n
	}
	return fmt.Sprintf("%d names greeted, %d heartbeats sent", len(items), total), nil
}
