package raft

// progressState is how the leader currently feeds one follower.
type progressState uint8

const (
	// probe: where the follower's log matches is unknown; send one MsgApp per heartbeat
	// or response, and back off on rejection.
	probe progressState = iota
	// replicate: the follower matches; stream MsgApps optimistically (Next advances at
	// send) within the in-flight window.
	replicate
	// snapshot: a snapshot is on its way; send nothing until it is reported.
	snapshotting
)

// progress is the leader's view of one member (Raft's nextIndex/matchIndex, plus flow
// control).
type progress struct {
	match, next uint64
	state       progressState
	// inflight holds the last index of each MsgApp sent and not yet acknowledged, oldest
	// first; at most maxInflight of them are outstanding in replicate state.
	inflight []uint64
	// probeSent pauses a probing follower after one MsgApp until it answers or a
	// heartbeat is due.
	probeSent bool
	// pendingSnap is the index of the snapshot being sent.
	pendingSnap uint64
	// recentActive: heard from in this election period (check-quorum); quietPeriods:
	// how many whole periods in a row it was not.
	recentActive bool
	quietPeriods int
	// sentCommit is the commit index the member was last told.
	sentCommit uint64
	// waiting: its last answer said its driver waits for a commit (Message.Waiting).
	waiting bool
	// ackedRound is the highest heartbeat round the member has echoed (reads, lease).
	ackedRound uint64
	learner    bool
}

func (p *progress) becomeProbe() {
	if p.state == snapshotting {
		// the follower now holds at least the snapshot
		p.next = max(p.match+1, p.pendingSnap+1)
	} else {
		p.next = p.match + 1
	}
	p.state, p.inflight, p.probeSent, p.pendingSnap = probe, p.inflight[:0], false, 0
}

func (p *progress) becomeReplicate() {
	p.state, p.inflight, p.probeSent = replicate, p.inflight[:0], false
	p.next = p.match + 1
}

func (p *progress) becomeSnapshot(index uint64) {
	p.state, p.inflight, p.probeSent, p.pendingSnap = snapshotting, p.inflight[:0], false, index
}

// maybeUpdate records that the follower holds everything up to n.
func (p *progress) maybeUpdate(n uint64) bool {
	updated := false
	if p.match < n {
		p.match = n
		updated = true
		p.probeSent = false
	}
	p.next = max(p.next, n+1)
	return updated
}

// maybeDecrement handles a rejection of the MsgApp whose prevLogIndex was rejected, with
// the follower's hint of where to retry. It reports false for a stale rejection.
func (p *progress) maybeDecrement(rejected, hint uint64) bool {
	if p.state == replicate {
		if rejected <= p.match {
			return false // an answer to an old message
		}
		p.next = p.match + 1
		return true
	}
	if p.next-1 != rejected {
		return false // not the probe we are waiting for
	}
	p.next = max(min(rejected, hint+1), 1)
	p.probeSent = false
	return true
}

// paused reports whether the leader must not send this member another MsgApp now.
func (p *progress) paused(maxInflight int) bool {
	switch p.state {
	case probe:
		return p.probeSent
	case replicate:
		return len(p.inflight) >= maxInflight
	}
	return true
}

// sent records a MsgApp whose last entry is last.
func (p *progress) sent(last uint64, nents int) {
	switch p.state {
	case replicate:
		if nents > 0 {
			p.next = last + 1
			p.inflight = append(p.inflight, last)
		}
	case probe:
		p.probeSent = true
	}
}

// freeInflight forgets every in-flight message covered by an acknowledgement of n.
func (p *progress) freeInflight(n uint64) {
	i := 0
	for i < len(p.inflight) && p.inflight[i] <= n {
		i++
	}
	p.inflight = append(p.inflight[:0], p.inflight[i:]...)
}
