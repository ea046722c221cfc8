// Package jsonrpc is Open Conduit's transport: JSON-RPC 2.0 over a pair of
// byte streams, one JSON object per line, symmetric (either side calls the
// other, also while serving a call). It is built on go.lsp.dev/jsonrpc2's
// message types, ids, envelope encoding and message scanner, and hides the
// library, so nothing else imports it and it could be swapped.
//
// The connection loop is this package's own (loop.go), not the library's
// Conn: that one cost every served call several microseconds this side does
// not need (a pooled request set up and torn down, its in-flight state taken
// under one lock four times, every request line scanned a second time, the
// answer boxed and copied through a framer, and on every release the params
// cloned again and a reading goroutine started). Here each line is read once
// by the guard, classified in one pass, and a call's answer is encoded once
// and written whole; answers to requests that arrived together go out
// together, in one write, and lines sent while another is being written
// (callers at once) are queued and go out together in the next write, made
// by the goroutine already writing (no timer is waited for).
//
// What this package adds to the library, and why:
//
//   - every incoming call runs on the reading goroutine (its stack already
//     grown, no goroutine switch) for at most a short grace period; a call
//     that takes longer releases the reader (the role passes to a parked
//     spare goroutine), so a slow handler never stalls other messages for
//     longer than the grace period; a handler that calls the peer back
//     reads the answer with the role it holds, released on the spot when a
//     request comes meanwhile, so nested callbacks never deadlock and cost
//     no goroutine woken (ownread.go); a handler's context is its call's
//     own, made only as far as the handler uses it, and asking for its Done
//     channel releases the reader (the handler is about to wait);
//   - with Options.CallerReads (the host's side), a call made while no
//     other waits reads its own answer rather than being woken by the
//     reading goroutine with it (ownread.go), and leaves every request it
//     meets to that goroutine;
//   - $/cancel both ways: a caller whose context ends sends it and returns at
//     once; a receiver cancels the handler's context and answers -32800;
//   - at most 64 calls served at once; the next is answered overloaded at once
//     without pausing the reader;
//   - a 16 MiB bound on a line both ways: a longer incoming line ends the
//     connection, and nothing longer is ever written (a request too big to
//     send fails its caller with too_large, an answer too big to send is
//     replaced by a too_large error to its id; the connection stays up);
//   - frames that are always one line (U+2028/U+2029 escaped), each written
//     whole or not at all: a line not taken within the write deadline closes
//     the connection at once, so nothing follows a cut-off line and nothing
//     queued behind it waits a deadline of its own;
//   - every incoming line treated by rule (wire.go): answers go to this
//     side's own calls, so a malformed answer fails its call alone, saying
//     what was wrong, and an answer nobody waits for is logged and dropped;
//     a batch or a request whose id is null is refused with a null-id error
//     and never runs;
//   - authored errors cross as -32000 with data.code; anything else as
//     internal, with the detail kept in this side's log; a panicking handler
//     answers internal and the connection lives on;
//   - a typed handler table both sides register their methods in, and typed
//     calls: Serve and Invoke take a protocol.Desc, so a method's name and its
//     params and result types are bound once for the server and the caller.
//
// It knows no method's meaning.
package jsonrpc
