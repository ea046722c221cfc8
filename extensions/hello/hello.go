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

// entry is one hello entry of the current configuration, its config
// decoded.
type entry struct {
	sdk.Entry
	config EntryConfig
}

// entries are the hello entries of the current configuration.
type entries struct {
	mu   sync.Mutex
	list []entry
}

// configure keeps each generation's entries for the heartbeat.
func (e *entries) configure(_ context.Context, _ *sdk.Request, p sdk.ConfigureParams) (sdk.ConfigureResult, error) {
	list := make([]entry, 0, len(p.Entries))
	for _, en := range p.Entries {
		c, err := sdk.DecodeEntry[EntryConfig](en)
		if err != nil {
			return sdk.ConfigureResult{}, err
		}
		list = append(list, entry{Entry: en, config: c})
	}
	e.mu.Lock()
	e.list = list
	e.mu.Unlock()
	return sdk.ConfigureResult{}, nil
}

func (e *entries) get() []entry {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]entry(nil), e.list...)
}

// Extension builds the hello extension.
func Extension() *sdk.Extension {
	var es entries
	return sdk.New(Name, sdk.Version("0.2.0"), sdk.HostRun(),
		sdk.Title("Hello"), sdk.Summary("greets by name, counts greetings in its KV, and sends a heartbeat into its scopes")).
		EntryType(Name, sdk.EntryConfig[EntryConfig]()).
		Configure(es.configure).
		Family(Heartbeat, sdk.Loss("a missed heartbeat is not sent again")).
		Family(Greeted, sdk.Loss("a greeting not recorded is not recorded later")).
		Schema(Heartbeat, 1).
		Schema(Greeted, 1).
		Operation("hello.greet", sdk.Handler(greet),
			sdk.Describe("greet someone by name"),
			sdk.Guidance("Call `hello.greet` with a name; the answer says how many times that name was greeted.")).
		Task("hello-heartbeat", HeartbeatEvery, func(ctx context.Context, r *sdk.Request) error { return heartbeat(ctx, r.Host, es.get()) }).
		Check("hello-kv", kvCheck)
}

// EntryConfig is a hello entry's config. The SDK refuses an entry whose
// config has any other field, or a greeting that is not a string.
type EntryConfig struct {
	Greeting string `json:"greeting,omitempty" doc:"The heartbeat's greeting (default Hello)."`
}

// greet counts the greeting and, in a scope, records it as an Event in the
// same batch, so the count and the Event land together or not at all.
func greet(ctx context.Context, r *sdk.Request, in GreetInput) (Greeting, error) {
	if in.Name == "" {
		return Greeting{}, sdk.Errorf(sdk.ErrInvalid, "name is empty: say who to greet")
	}
	var count int
	_, err := r.Host.Update(ctx, Namespace, in.Name, func(old []byte, _ bool, b *sdk.Batch) ([]byte, error) {
		count, _ = strconv.Atoi(string(old))
		count++
		if r.Authority.Scope != "" {
			data, _ := json.Marshal(map[string]any{"name": in.Name, "count": count})
			// The request ID makes a retried call the same Event.
			id := r.RequestID
			if id == "" {
				id = fmt.Sprintf("%s/%d", in.Name, count)
			}
			b.Emit(sdk.Emission{
				Scope: r.Authority.Scope, Source: Name, DeliveryID: "greet/" + id, Type: Greeted,
				Payload: sdk.Payload{Schema: GreetedSchema, Data: data},
			})
		}
		return []byte(strconv.Itoa(count)), nil
	})
	if err != nil {
		return Greeting{}, fmt.Errorf("counting the greeting: %w", err)
	}
	return Greeting{Greeting: "Hello, " + in.Name + "!", Count: count}, nil
}

// heartbeat sends one Event into the scope of each entry, counting beats
// in KV in the same atomic batch.
func heartbeat(ctx context.Context, h *sdk.Host, es []entry) error {
	for _, e := range es {
		key := e.Scope + "/" + e.Name
		greeting := e.config.Greeting
		if greeting == "" {
			greeting = "Hello"
		}
		_, err := h.Update(ctx, Name+".beats", key, func(old []byte, _ bool, b *sdk.Batch) ([]byte, error) {
			n, _ := strconv.Atoi(string(old))
			n++
			data, _ := json.Marshal(Beat{Entry: e.Name, Beat: n, Greeting: greeting})
			b.Emit(sdk.Emission{
				Scope: e.Scope, Source: Name + "/" + e.Scope + "/" + e.Name, DeliveryID: fmt.Sprintf("beat/%d", n), Type: Heartbeat,
				Payload: sdk.Payload{Schema: HeartbeatSchema, Data: data},
			})
			return []byte(strconv.Itoa(n)), nil
		})
		if err != nil {
			return fmt.Errorf("heartbeat for %s: %w", key, err)
		}
	}
	return nil
}

// kvCheck reads the extension's KV, which proves the host serves it.
func kvCheck(ctx context.Context, r *sdk.Request, _ bool) (string, error) {
	items, err := r.Host.List(ctx, Namespace, "")
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", Namespace, err)
	}
	beats, err := r.Host.List(ctx, Name+".beats", "")
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
