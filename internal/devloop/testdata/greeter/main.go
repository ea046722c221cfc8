// Command greeter-extension is the package extension dev's test runs: an
// operation that greets and counts greetings in its KV namespace, and an
// entry type whose config must name an owner.
package main

import (
	"context"
	"os"
	"strconv"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/protocol"
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

type entryConfig struct {
	Owner string `json:"owner"`
}

func greet(ctx context.Context, _ protocol.Authority, in input) (output, error) {
	var count int
	err := sdk.HostFrom(ctx).Update(ctx, "greeter.counts", in.Name, func(old []byte, _ bool) ([]byte, error) {
		count, _ = strconv.Atoi(string(old))
		count++
		return []byte(strconv.Itoa(count)), nil
	})
	if err != nil {
		return output{}, err
	}
	return output{Greeting: greeting + ", " + in.Name + "!", Count: count, PID: os.Getpid()}, nil
}

func validate(_ context.Context, p protocol.ValidateParams) (protocol.ValidateResult, error) {
	var c entryConfig
	if err := json.Unmarshal(p.Config, &c, json.RejectUnknownMembers(true)); err != nil || c.Owner == "" {
		return protocol.ValidateResult{}, protocol.Errorf(protocol.ErrInvalid, "a greeter entry needs an owner: {\"owner\": \"you\"}")
	}
	return protocol.ValidateResult{}, nil
}

func main() {
	ext := sdk.New("greeter", sdk.Version("0.1.0")).
		EntryType("greeter").
		Operation("greeter.greet", sdk.Handler(greet), sdk.Describe("greet someone and count it"))
	ext.Validate = validate
	if sdk.PackageCommand(os.Args[1:], ext.Manifest, nil, os.Stdout) {
		return
	}
	if err := sdk.Serve(ext); err != nil {
		os.Exit(1)
	}
}
