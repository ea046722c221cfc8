// Command greeter-extension is the package extension dev's test runs: an
// operation that greets and counts greetings in its KV namespace, and an
// entry type whose config must name an owner.
package main

import (
	"context"
	"os"
	"strconv"

	"github.com/open-conduit/open-conduit/sdk"
)

// greeting is the text the test edits to see the package rebuilt.
const greeting = "Hello"

type input struct {
	Name string `json:"name"`
}

type output struct {
	Greeting string `json:"greeting"`
	Count    int    `json:"count"`
	PID      int    `json:"pid"`
}

// entryConfig is a greeter entry's config; the SDK refuses one without an
// owner.
type entryConfig struct {
	Owner string `json:"owner" doc:"Who runs this greeter."`
}

func greet(ctx context.Context, r *sdk.Request, in input) (output, error) {
	var count int
	_, err := r.Host.Update(ctx, "greeter.counts", in.Name, func(old []byte, _ bool, _ *sdk.Batch) ([]byte, error) {
		count, _ = strconv.Atoi(string(old))
		count++
		return []byte(strconv.Itoa(count)), nil
	})
	if err != nil {
		return output{}, err
	}
	return output{Greeting: greeting + ", " + in.Name + "!", Count: count, PID: os.Getpid()}, nil
}

func main() {
	sdk.Main(sdk.New("greeter", sdk.Version("0.1.0")).
		EntryType("greeter", sdk.EntryConfig[entryConfig]()).
		Operation("greeter.greet", sdk.Handler(greet), sdk.Describe("greet someone and count it")))
}
