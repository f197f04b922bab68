package netserve

import (
	"context"
	"encoding/binary"
	"math"
	"syscall"
	"time"
)

// outcome is what came back for the gen'th batch or barrier lc handed the backend, or a
// kick (Kickable): serve lc, or close it.
type outcome struct {
	lc          *loopConn
	gen         uint64
	err         error
	kick, close bool
}

// serveAsyncRound serves one round of an asynchronous loop: the outcomes that came back
// since the last round (and the requests past their deadline), then the sockets epoll
// reported and those left readable, each connection handing the backend the batch or
// barrier it then waits for, if any; then the replies. A connection that waits is not
// read: what it has not consumed stays in its buffer until the outcome lets it go on.
func (l *Loop) serveAsyncRound(evs []syscall.EpollEvent) {
	now := time.Now().UnixMilli()
	l.roundNo++
	round := l.round[:0]
	take := func(lc *loopConn) {
		if lc.roundNo != l.roundNo {
			lc.roundNo = l.roundNo
			round = append(round, lc)
		}
	}

	l.mu.Lock()
	for _, ev := range evs {
		if ev.Fd == int32(l.efd) {
			var b [8]byte
			syscall.Read(l.efd, b[:]) // reset it before the queue is taken: see queue
			continue
		}
		if lc := l.conns[ev.Fd]; lc != nil {
			if ev.Events&(syscall.EPOLLIN|syscall.EPOLLHUP|syscall.EPOLLERR|syscall.EPOLLRDHUP) != 0 {
				lc.readable = true
			}
			take(lc)
		}
	}
	var expired []*loopConn
	l.cmu.Lock()
	tick := l.tick
	l.tick = false
	done := l.done
	l.done, l.spare = l.spare[:0], nil
	l.cmu.Unlock()
	if tick {
		// The timer's round: every connection past its deadline is answered now.
		l.armed = false
		for _, lc := range l.conns {
			if lc.inflight && now >= lc.deadline {
				expired = append(expired, lc)
			}
		}
	}
	l.mu.Unlock()
	for _, lc := range l.again {
		take(lc)
	}
	clear(l.again)
	l.again = l.again[:0]

	for _, o := range done {
		if o.kick {
			if lc := o.lc; lc.fd >= 0 { // else closed or released
				lc.closing = lc.closing || o.close
				if !lc.inflight && !lc.closing {
					if !lc.c.Consume(0, now) {
						lc.closing = true
					}
					l.dispatch(lc, now)
				}
				take(lc)
			}
			continue
		}
		if o.lc.fd >= 0 && o.lc.inflight && o.gen == o.lc.gen { // else closed, or timed out
			l.resume(o.lc, o.err, now)
			take(o.lc)
		}
	}
	clear(done)
	l.spare = done[:0]
	for _, lc := range expired {
		if lc.fd >= 0 && lc.inflight && now >= lc.deadline {
			// The outcome is unknown, as for any timed-out write; the one that comes
			// back later names an older gen and is dropped.
			err := context.DeadlineExceeded
			if lc.barrier {
				err = ErrBarrierTimeout
			}
			l.resume(lc, err, now)
			take(lc)
		}
	}

	for _, lc := range round {
		if lc.inflight || !lc.readable || lc.outWait || lc.closing || lc.fd < 0 {
			continue
		}
		p := lc.c.Space()
		n, err := recv(lc.fd, p)
		switch {
		case err == syscall.EAGAIN:
			lc.readable = false
			continue
		case err == syscall.EINTR:
			continue
		case err != nil || n <= 0:
			lc.closing = true
			continue
		}
		// A read that did not fill the buffer drained the socket: data that arrives
		// after it is reported anew (edge-triggered).
		lc.readable = n == len(p)
		if !lc.c.Consume(n, now) {
			lc.closing = true
		}
		l.dispatch(lc, now)
	}

	for _, lc := range round {
		if lc.fd < 0 {
			continue
		}
		l.send(lc)
		switch {
		case lc.fd < 0 || lc.inflight || lc.outWait || lc.closing:
		case lc.ac.WantsRelease():
			l.release(lc)
		case lc.readable:
			l.again = append(l.again, lc)
		}
	}
	clear(round) // hold no closed connection until the next round
	l.round = round[:0]
	if !l.armed {
		l.armTimer()
	}
}

// resume hands lc the outcome of what it waited for, and has it go on with what it had
// buffered behind it (up to the next wait, which it hands the backend).
func (l *Loop) resume(lc *loopConn, err error, now int64) {
	lc.inflight = false
	l.waiting--
	if err != nil {
		err = l.async.ClientError(err)
	}
	if lc.barrier {
		lc.ac.BarrierDone(err)
	} else {
		lc.c.FinishBatch(err, now)
	}
	if !lc.c.Consume(0, now) {
		lc.closing = true
	}
	l.dispatch(lc, now)
}

// dispatch hands the backend what lc waits for: its open batch, else the read barrier.
func (l *Loop) dispatch(lc *loopConn, now int64) {
	data, sink, ok := lc.c.CutBatch()
	if !ok && !lc.ac.WantsBarrier() {
		return
	}
	lc.inflight, lc.barrier = true, !ok
	l.waiting++
	lc.gen++
	lc.deadline = math.MaxInt64
	if t := l.async.RequestTimeout(); t > 0 {
		lc.deadline = now + t.Milliseconds()
	}
	// One small closure per request, naming its generation (the backend allocates a
	// proposal per request anyway).
	gen := lc.gen
	done := func(err error) { l.queue(outcome{lc: lc, gen: gen, err: err}) }
	if ok {
		l.async.ProposeAsync(data, sink, done)
	} else {
		l.async.ReadBarrierAsync(done)
	}
}

// release hands lc's socket to the connection (AsyncConn.WantsRelease): nothing of it is
// in flight, and its replies are written.
func (l *Loop) release(lc *loopConn) {
	fd := lc.fd
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, fd, nil); err != nil {
		l.drop(lc)
		return
	}
	l.mu.Lock()
	delete(l.conns, int32(fd))
	l.mu.Unlock()
	lc.fd = -1
	lc.ac.Released(fd)
}

// armTimer has the loop look for requests past their deadline in a while, if any
// connection waits for the backend.
func (l *Loop) armTimer() {
	t := l.async.RequestTimeout()
	if l.waiting == 0 || t <= 0 {
		return
	}
	// A request is answered at most this late: 50 ms, or a quarter of a shorter timeout.
	d := min(max(t/4, time.Millisecond), 50*time.Millisecond)
	l.cmu.Lock() // Close stops the timer
	defer l.cmu.Unlock()
	if l.efdGone {
		return // closed
	}
	if l.timer == nil {
		l.timer = time.AfterFunc(d, l.timedOut)
	} else {
		l.timer.Reset(d)
	}
	l.armed = true
}

func (l *Loop) timedOut() {
	l.cmu.Lock()
	defer l.cmu.Unlock()
	l.tick = true
	l.wake()
}

// queue records an outcome for the loop, from any goroutine, and wakes the loop when the
// queue was empty (a later outcome finds the loop woken already). The loop reads the
// eventfd before it takes the queue, so an outcome queued after that read writes to it
// anew.
func (l *Loop) queue(o outcome) {
	l.cmu.Lock()
	defer l.cmu.Unlock()
	l.done = append(l.done, o)
	if len(l.done) == 1 {
		l.wake()
	}
}

// wake makes the eventfd readable; under cmu.
func (l *Loop) wake() {
	if l.efdGone {
		return // closed
	}
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], 1)
	syscall.Write(l.efd, b[:])
}
