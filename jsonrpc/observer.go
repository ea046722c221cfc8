package jsonrpc

// Observer sees every line a connection reads or writes: a wire tap. It is
// optional (Options.Observer, nil by default), so a connection without one
// pays a single nil check per line.
//
// Observe runs on the goroutine that moves the line: the reader for an
// incoming line, the one sending an outgoing line, when it is framed,
// before it is written or queued, so a request is always observed before
// its answer can be. It
// must be quick and must not block; frame is the line without its newline
// and is valid only during the call (copy what you keep).
type Observer interface {
	Observe(outgoing bool, frame []byte)
}
