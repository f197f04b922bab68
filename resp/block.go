package resp

import (
	"bytes"
	"slices"
	"time"

	"github.com/nanokv/nanokv/kvstore"
)

// blockedCheck is how often a blocked client's socket is looked at for the peer having
// gone (besides just before every attempt to pop): a client that left does not keep
// its goroutine and its wait for ever.
const blockedCheck = 500 * time.Millisecond

// block runs a blocking command (BLPOP, BRPOP, BRPOPLPUSH, BLMOVE, BLMPOP, BZPOPMIN,
// BZPOPMAX, BZMPOP, XREAD ... BLOCK) outside MULTI, on the connection's own goroutine.
// It runs the command (a pop is proposed, an XREAD read after the barrier), and when
// that found nothing it waits until one of the keys is created, or a stream added to
// (kvstore.Store.AwaitKeys), and runs it again, until the timeout, which gets the nil
// array Redis replies then.
//
// An element is only ever popped by a proposal, and a proposal is only made for a
// client that is still connected (peerGone just before it), so a client that leaves
// while it waits takes nothing with it. Clients woken by the same key race for it with
// their proposals: the first one applied gets the element, the others wait again, where
// Redis serves them in the order they blocked.
func (c *conn) block(spec *kvstore.Spec, args [][]byte) {
	keys, ms, ok := kvstore.BlockingCall(args)
	write := spec.Writes(args)
	run := func() {
		if write {
			c.propose(kvstore.AppendCommand(nil, c.db, args), 1, false)
		} else {
			c.blocking = true // the attempt's output may be cut back (tracking.go)
			c.read(spec, args)
			c.blocking = false
		}
	}
	if !ok {
		run() // it does not wait: malformed, or XREAD without BLOCK
		return
	}
	if spec.Name == "xread" {
		// every attempt reads after the stream's last ID as the first saw it: "$" is
		// resolved once, after the read barrier
		args = slices.Clone(args)
		a, _ := kvstore.ParseXRead(args)
		if !c.readBarrier() {
			return
		}
		c.s.b.Store().XReadResolve(c.db, c.clock.Now(), a)
	}
	var expired <-chan time.Time
	if ms > 0 {
		t := time.NewTimer(time.Duration(ms) * time.Millisecond)
		defer t.Stop()
		expired = t.C
	}
	var check *time.Ticker
	defer func() {
		if check != nil {
			check.Stop()
		}
	}()
	store := c.s.b.Store()
	for first := true; ; first = false {
		// From the second attempt on, the wait is registered before the attempt, so a
		// key created by any entry applied after it wakes this client. The first attempt
		// goes without: it usually finds something, and one that does not is followed at
		// once by a registered one, which sees what came between the two.
		var w *kvstore.KeyWait
		if !first {
			w = store.AwaitKeys(c.db, keys)
		}
		start := len(c.B)
		c.barrierOK = false // an attempt after a wait reads what was written meanwhile
		run()
		if !nothingPopped(c.B[start:]) {
			if w != nil {
				w.Cancel()
			}
			return
		}
		c.B = c.B[:start]
		if w == nil {
			continue
		}
		if check == nil {
			check = time.NewTicker(blockedCheck)
			c.s.stats.blocked.Add(1)
			c.publish() // CLIENT LIST shows the blocked command as Redis does (cmd=blpop)
			c.shared.blocked.Store(true)
			defer func() {
				c.s.stats.blocked.Add(-1)
				c.shared.blocked.Store(false)
				select { // an unblock that came too late is not the next wait's
				case <-c.shared.unblock:
				default:
				}
			}()
			if !c.flushOut() { // the replies before this command are not held back
				w.Cancel()
				c.closeNext = true
				return
			}
		}
		woken := false
		for !woken {
			select {
			case <-w.C:
				woken = true
			case <-expired:
				w.Cancel()
				c.NullArray()
				return
			case <-c.s.done:
				w.Cancel()
				c.NullArray()
				return
			case asError := <-c.shared.unblock:
				w.Cancel()
				if asError {
					c.Error("UNBLOCKED client unblocked via CLIENT UNBLOCK")
				} else {
					c.NullArray() // as if it timed out
				}
				return
			case <-c.shared.killed:
				w.Cancel()
				c.closeNext = true
				return
			case <-check.C:
				if c.peerGone() {
					w.Cancel()
					c.closeNext = true
					return
				}
			}
		}
		w.Cancel()
		if c.peerGone() {
			c.closeNext = true
			return
		}
	}
}

// nothingPopped reports whether a blocking command's reply is the nil it gives when
// every key was empty: a nil array, or BRPOPLPUSH's and BLMOVE's nil bulk (RESP3: null).
// An element is never nil, and an error is not nil either.
func nothingPopped(reply []byte) bool {
	return bytes.Equal(reply, []byte("*-1\r\n")) || bytes.Equal(reply, []byte("$-1\r\n")) || bytes.Equal(reply, []byte("_\r\n"))
}
