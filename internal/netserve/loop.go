package netserve

import (
	"context"
	"fmt"
	"time"

	"github.com/nanokv/nanokv/kvstore"
)

// ErrBarrierTimeout is what an asynchronous loop hands ClientError for a read whose
// barrier did not pass within the request timeout (a write's is context.DeadlineExceeded,
// which it wraps).
var ErrBarrierTimeout = fmt.Errorf("netserve: read barrier: %w", context.DeadlineExceeded)

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

// AsyncConn is a LoopConn that an asynchronous loop (NewAsyncLoop) can drive. Consume
// must not wait there: it stops before a request that needs the open batch committed
// (a read behind the connection's writes; the loop proposes the batch first) or the
// backend's read barrier passed (WantsBarrier; the loop passes it first), and the loop
// calls Consume(0, now) to go on with what is buffered once that is done. While a
// connection's batch or barrier is in flight the loop reads nothing more from it, so
// its replies leave in request order.
type AsyncConn interface {
	LoopConn
	// WantsBarrier reports that Consume stopped before a read that needs the read
	// barrier passed; the loop passes it and reports with BarrierDone.
	WantsBarrier() bool
	BarrierDone(err error)
	// WantsRelease reports that Consume stopped before a request the loop cannot serve
	// (one that may block: a transaction, an admin command). Once nothing is in flight
	// and every reply is written, the loop stops watching the socket and calls Released
	// with its descriptor, which the connection owns from then on (to serve from a
	// goroutine of its own, with what it has buffered).
	WantsRelease() bool
	Released(fd int)
}

// Kickable is an AsyncConn that other goroutines may need the loop to serve (a
// ZooKeeper session, whose watch notifications the applier queues).
type Kickable interface {
	AsyncConn
	// SetKick is called once, by Add, before the loop serves the connection. kick(false)
	// has the loop serve it soon, though its socket reported nothing: write what was
	// queued meanwhile, and go on with requests it holds (Consume(0, now)) unless it
	// waits for the backend; kick(true) closes it once its output is written and
	// nothing is in flight. kick may be called from any goroutine, also once the
	// connection is closed or released (it then does nothing); it never blocks.
	SetKick(kick func(close bool))
}

// AsyncBackend is what an asynchronous loop proposes through: a cluster member, whose
// commit takes a round trip to the other members. Its done callbacks may run on any
// goroutine, at most once per call, and must find the loop free to take them: they
// only queue the outcome and wake the loop.
type AsyncBackend interface {
	// ProposeAsync proposes data with sink (nil for a batch of blind writes) and calls
	// done with the outcome: at commit without a sink, after the apply with one.
	ProposeAsync(data []byte, sink kvstore.Sink, done func(error))
	// ReadBarrierAsync calls done once a linearizable read may be served, or with why
	// not.
	ReadBarrierAsync(done func(error))
	// ClientError turns an error ProposeAsync reported (or context.DeadlineExceeded, for
	// a request the loop timed out, ErrBarrierTimeout for a read barrier) into the one
	// the client is told; it must leave the errors it returns unchanged.
	ClientError(err error) error
	// RequestTimeout is how long a request may wait for its outcome (0: no limit). The
	// loop answers one that waits longer with context.DeadlineExceeded, at most 50 ms
	// (or a quarter of a shorter timeout) late; its outcome is then unknown, as for any
	// timed-out write.
	RequestTimeout() time.Duration
}
