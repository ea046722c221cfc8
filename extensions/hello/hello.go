// Package hello is the bundled example extension: one operation that greets
// and counts greetings in its KV namespace, a background task and a doctor
// check. The open-conduit binary serves it (open-conduit extension-run
// hello); it is built only on the SDK, as a third party would build it.
package hello

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
)

// Name is the package's name.
const Name = "hello"

// Namespace is where greetings are counted, one key per name.
const Namespace = "hello.greetings"

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

// Extension builds the hello extension.
func Extension() *sdk.Extension {
	return sdk.New(Name, sdk.Version("0.1.0"), sdk.HostRun(),
		sdk.Title("Hello"), sdk.Summary("greets by name and counts greetings in its KV")).
		Operation("hello.greet", sdk.Handler(greet),
			sdk.Describe("greet someone by name"),
			sdk.Guidance("Call `hello.greet` with a name; the answer says how many times that name was greeted.")).
		Task("hello-census", time.Hour, census).
		Check("hello-kv", kvCheck)
}

func greet(ctx context.Context, _ protocol.Authority, in GreetInput) (Greeting, error) {
	if in.Name == "" {
		return Greeting{}, protocol.Errorf(protocol.ErrInvalid, "name is empty: say who to greet")
	}
	var count int
	err := sdk.HostFrom(ctx).Update(ctx, Namespace, in.Name, func(old []byte, _ bool) ([]byte, error) {
		count, _ = strconv.Atoi(string(old))
		count++
		return []byte(strconv.Itoa(count)), nil
	})
	if err != nil {
		return Greeting{}, fmt.Errorf("counting the greeting: %w", err)
	}
	return Greeting{Greeting: "Hello, " + in.Name + "!", Count: count}, nil
}

// census writes the number of names greeted so far.
func census(ctx context.Context, h *sdk.Host) error {
	items, err := h.List(ctx, Namespace, "")
	if err != nil {
		return err
	}
	_, err = h.Commit(ctx, sdk.NewBatch().Put(Name, "census", []byte(strconv.Itoa(len(items)))))
	return err
}

// kvCheck reads the extension's KV, which proves the host serves it.
func kvCheck(ctx context.Context, h *sdk.Host, _ bool) (string, error) {
	items, err := h.List(ctx, Namespace, "")
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", Namespace, err)
	}
	return fmt.Sprintf("%d names greeted", len(items)), nil
}
