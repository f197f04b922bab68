package netserve

import "github.com/nanokv/nanokv/kvstore"

// LoopConn is a connection's protocol side, as a Loop drives it. The loop calls it from
// its goroutine only.
type LoopConn interface {
	// Space is the buffer space for the next read (not empty), after making room.
	Space() []byte
	// Consume handles the requests that the n bytes just read into Space complete, with
	// now (unix ms) as their clock. Replies go to Output; writes may stay in an open
	// batch for the loop to propose. false: close once the output is written.
	Consume(n int, now int64) bool
	// CutBatch closes the open batch: its data, the sink for its replies (nil when they
	// are known at commit), and false when there is none.
	CutBatch() (data []byte, sink kvstore.Sink, ok bool)
	// FinishBatch renders the replies of the batch CutBatch closed, once its proposal
	// returned err; now is the clock after the proposal.
	FinishBatch(err error, now int64)
	// Output is what is to be written. It must not change until Written(n) tells that
	// all of it, n bytes, has been (over one round or several, while the socket's
	// buffer is full).
	Output() []byte
	Written(n int)
	// Closed tells that the loop closed the connection.
	Closed()
}

// ProposeMany proposes batches[i] with sinks[i] for every i and returns once all are
// answered, with errs[i] the error for batches[i].
type ProposeMany func(batches [][]byte, sinks []kvstore.Sink, errs []error)
