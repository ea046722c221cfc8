package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/spf13/pflag"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/protocol"
)

// Exit statuses of `call` beyond 0, 1 (the call failed) and 2 (misuse).
const (
	// exitUnauthorized: the toolbelt refused the execution's token, or the
	// binding does not grant the operation.
	exitUnauthorized = 3
)

// callAnswer is what `call --json` prints: the toolbelt's answer and the
// request ID the call carried, so a script can retry it.
type callAnswer struct {
	Output    jsontext.Value `json:"output,omitzero"`
	Schema    string         `json:"schema,omitempty"`
	Replayed  bool           `json:"replayed"`
	RequestID string         `json:"request_id"`
	Error     *client.Error  `json:"error,omitempty"`
}

func callCommand() *command {
	var input, requestID string
	return &command{
		name:  "call",
		usage: "OPERATION",
		short: "call an operation as the running execution (for programs an executor runs)",
		long: "Call an operation through the toolbelt as the execution that runs this program: a\n" +
			"builtin (read_context, wait, declare_outcome) or an operation the Work's binding\n" +
			"grants. It reads the toolbelt's socket from $" + protocol.EnvToolbelt + " and the execution's\n" +
			"token from $" + protocol.EnvToken + ", which the executor sets.\n\n" +
			"The call carries a request ID (a fresh one, or --request-id): a call that gets no\n" +
			"answer is retried with it, and the toolbelt answers a call whose request ID already\n" +
			"has a result with that result, without calling the operation again. A script that\n" +
			"must retry the call itself passes the same --request-id.\n\n" +
			"The output's JSON is printed on stdout; --json prints the whole answer (output,\n" +
			"replayed, request_id). Exit status: 0 answered, 1 the call failed, 2 misuse\n" +
			"(flags, --input, or not run by an executor), 3 unauthorized (the token is no\n" +
			"longer its execution's, or the binding does not grant the operation).",
		minArgs: 1,
		maxArgs: 1,
		json:    true,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&input, "input", "", "the operation's input: a JSON object, @FILE to read it from a file, or - for stdin (default {})")
			fs.StringVar(&requestID, "request-id", "", "the call's request ID, to retry an earlier call (default: a fresh one)")
		},
		run: func(r *runner, args []string) error { return runCall(r, args[0], input, requestID) },
	}
}

func runCall(r *runner, operation, input, requestID string) error {
	in, err := readCallInput(r.stdin, input)
	if err != nil {
		return err
	}
	if len(requestID) > client.MaxToolbeltRequestID || strings.ContainsFunc(requestID, func(c rune) bool { return c < 0x21 || c > 0x7e }) {
		return usagef("--request-id must be at most %d printable ASCII characters without spaces", client.MaxToolbeltRequestID)
	}
	tb, err := client.ToolbeltFromEnv(os.Getenv)
	if err != nil {
		return usageError{err.Error()}
	}
	ans, id, err := tb.Call(r.ctx, client.ToolbeltRequest{Operation: operation, Input: in, RequestID: requestID})
	var ce *client.Error
	switch {
	case errors.As(err, &ce):
		if r.asJSON {
			_ = printJSON(r.stdout, callAnswer{RequestID: id, Error: ce})
		}
		fmt.Fprintf(r.stderr, "%s: %s: %s\n", r.path, ce.Code, oneLine(ce.Message))
		if ce.Code == protocol.CodeUnauthorized {
			return exitStatus(exitUnauthorized)
		}
		return exitStatus(1)
	case err != nil:
		return fmt.Errorf("%v (retry with --request-id %s, so an operation that ran is not run again)", err, id)
	}
	if r.asJSON {
		return printJSON(r.stdout, callAnswer{Output: ans.Output, Schema: ans.Schema, Replayed: ans.Replayed, RequestID: id})
	}
	out := ans.Output
	if len(out) == 0 {
		out = jsontext.Value("null")
	}
	_, err = r.stdout.Write(append(out, '\n'))
	return err
}

// readCallInput is --input: literal JSON, @FILE, or - for stdin; it must
// be a JSON object.
func readCallInput(stdin io.Reader, input string) (jsontext.Value, error) {
	var (
		data  []byte
		where = "--input"
		err   error
	)
	switch {
	case input == "":
		return jsontext.Value("{}"), nil
	case input == "-":
		where = "the input on stdin"
		data, err = io.ReadAll(io.LimitReader(stdin, client.MaxToolbeltRequest+1))
	case strings.HasPrefix(input, "@"):
		where = "the input file " + input[1:]
		data, err = readLimited(input[1:])
	default:
		data = []byte(input)
	}
	if err != nil {
		return nil, usagef("reading %s: %v", where, err)
	}
	if len(data) > client.MaxToolbeltRequest {
		return nil, usagef("%s is over %d bytes (1 MiB), the toolbelt's bound", where, client.MaxToolbeltRequest)
	}
	v := jsontext.Value(strings.TrimSpace(string(data)))
	var obj map[string]jsontext.Value
	if err := json.Unmarshal(v, &obj); err != nil || obj == nil {
		return nil, usagef("%s must be a JSON object, such as '{\"description\":\"build\"}'", where)
	}
	return v, nil
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, client.MaxToolbeltRequest+1))
}
