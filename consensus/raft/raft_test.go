package raft

import (
	"errors"
	"slices"
	"testing"
)

// §5.2: a candidate that wins votes from a majority becomes leader; the others learn of
// it from its first AppendEntries.
func TestElectionWinsWithMajority(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.elect(1)
	nw.expectLeader(1)
	if got := nw.r(1).Term(); got != 1 {
		t.Fatalf("term %d, want 1", got)
	}
	// The no-op of the new term commits everywhere.
	for _, id := range nw.ids() {
		if c := nw.r(id).Committed(); c != 1 {
			t.Fatalf("member %d committed %d, want the no-op at 1", id, c)
		}
	}
}

// §5.2: a candidate without a majority does not become leader.
func TestElectionNeedsMajority(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.isolate(1)
	nw.r(1).campaign(campaignElection)
	nw.settle()
	if r := nw.r(1); r.Role() != Candidate {
		t.Fatalf("isolated candidate became %v", r.Role())
	}
}

// §9.6: pre-vote. An isolated member that keeps timing out does not raise its term, so
// when it comes back it does not depose the healthy leader.
func TestPreVoteKeepsPartitionedMemberFromDisrupting(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.elect(1)
	nw.isolate(3)
	nw.tick(3, 100)
	if r := nw.r(3); r.Term() != 1 || r.Role() != PreCandidate {
		t.Fatalf("isolated member: term %d role %v, want term 1 pre-candidate", r.Term(), r.Role())
	}
	nw.heal()
	nw.tickAll(3)
	nw.expectLeader(1)
	if got := nw.r(1).Term(); got != 1 {
		t.Fatalf("leader term moved to %d", got)
	}
}

// §5.1: a member that sees a higher term adopts it and becomes a follower, forgetting its
// vote.
func TestFollowerUpdatesTermFromMessage(t *testing.T) {
	for _, role := range []Role{Follower, Candidate, Leader} {
		nw := newNetwork(t, 3)
		r := nw.r(1)
		switch role {
		case Candidate:
			r.campaign(campaignElection)
		case Leader:
			nw.elect(1)
		}
		r.Step(Message{Type: MsgApp, From: 2, To: 1, Term: 5})
		if r.Term() != 5 || r.Role() != Follower || r.Lead() != 2 || r.vote != None {
			t.Fatalf("from %v: term %d role %v lead %d vote %d", role, r.Term(), r.Role(), r.Lead(), r.vote)
		}
	}
}

// §5.1: a request with a stale term is rejected; a stale leader is told the new term.
func TestStaleLeaderLearnsNewTerm(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.elect(1)
	nw.isolate(1)
	nw.tick(2, nw.r(2).cfg.ElectionTicks) // 2 and 3 stop hearing from 1; 1 is not ticked
	nw.tick(3, nw.r(3).cfg.ElectionTicks)
	nw.elect(2)
	nw.heal()
	// The old leader still believes it leads until it hears the new term.
	if nw.r(1).Role() != Leader {
		t.Fatal("setup: member 1 should still think it leads")
	}
	nw.tick(1, 1) // its heartbeat is answered with the new term
	if r := nw.r(1); r.Role() != Follower || r.Term() != nw.r(2).Term() {
		t.Fatalf("old leader: role %v term %d", r.Role(), r.Term())
	}
}

// §5.4.1: a voter denies its vote to a candidate whose log is less up to date.
func TestVoteDeniedToStaleLog(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.elect(1)
	nw.isolate(3)
	nw.propose(1, "a", "b")
	nw.heal()
	nw.isolate(1)
	// 3 lacks the two entries: 2 must refuse it.
	nw.tickAll(nw.r(1).cfg.ElectionTicks) // 2's lease on 1 runs out
	nw.r(3).campaign(campaignElection)
	nw.settle()
	if nw.r(3).Role() == Leader {
		t.Fatal("member with a stale log was elected")
	}
	nw.r(2).campaign(campaignElection)
	nw.settle()
	if nw.r(2).Role() != Leader {
		t.Fatalf("up-to-date member 2 not elected: %v", nw.r(2).Role())
	}
}

// §5.2: each member votes for at most one candidate in a term.
func TestOneVotePerTerm(t *testing.T) {
	nw := newNetwork(t, 3)
	r := nw.r(3)
	r.Step(Message{Type: MsgVote, From: 1, To: 3, Term: 1})
	r.Step(Message{Type: MsgVote, From: 2, To: 3, Term: 1})
	msgs := nw.process(3)
	var granted []uint64
	for _, m := range msgs {
		if m.Type == MsgVoteResp && !m.Reject {
			granted = append(granted, m.To)
		}
	}
	if !slices.Equal(granted, []uint64{1}) {
		t.Fatalf("votes granted to %v, want only [1]", granted)
	}
	if r.vote != 1 || r.disk().hs.Vote != 1 {
		t.Fatal("vote not recorded in the hard state")
	}
}

func (r *Raft) disk() disk { return disk{hs: r.prevHard} }

// §4.2.3: a member that hears from a live leader ignores vote requests (it would
// otherwise let a disruptive candidate depose a healthy leader); a transfer campaign is
// the exception.
func TestVoteIgnoredWhileLeaderAlive(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.elect(1)
	r := nw.r(2)
	r.Step(Message{Type: MsgVote, From: 3, To: 2, Term: 5, Index: 100, LogTerm: 5})
	if r.Term() != 1 || len(nw.process(2)) != 0 {
		t.Fatal("follower in lease answered a vote request or changed term")
	}
	r.Step(Message{Type: MsgVote, From: 3, To: 2, Term: 5, Index: 100, LogTerm: 5, Context: ctxTransfer})
	if r.Term() != 5 || r.vote != 3 {
		t.Fatalf("transfer vote not granted: term %d vote %d", r.Term(), r.vote)
	}
}

// When the driver proves the leader dead, its followers drop its lease and the first in
// rank wins an election in a tick, where an election timeout would take ten or more.
func TestPeerDownElectsWithinTicks(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.elect(1)
	nw.propose(1, "a")
	nw.isolate(1) // killed
	nw.r(2).PeerDown(3)
	if nw.r(2).Lead() != 1 {
		t.Fatal("a hint about a member that does not lead changed the leader")
	}
	nw.r(2).PeerDown(1)
	nw.r(3).PeerDown(1)
	nw.r(2).Tick()
	nw.r(3).Tick()
	nw.settle()
	if nw.r(2).Role() != Leader || nw.r(3).Lead() != 2 {
		t.Fatalf("one tick after the hint: 2 is %v, 3 follows %d", nw.r(2).Role(), nw.r(3).Lead())
	}
	nw.propose(2, "b")
	if got := nw.members[3].appliedData(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("member 3 applied %v", got)
	}
}

// A (pre-)candidate asks again, every voteResendTicks, the voters it has not heard from:
// a request lost on a stale connection costs a few ticks, not an election timeout.
func TestLostVoteRequestIsAskedAgain(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.elect(1)
	nw.propose(1, "a")
	nw.isolate(1) // killed
	nw.cut[[2]uint64{2, 3}] = true
	nw.r(2).PeerDown(1)
	nw.r(3).PeerDown(1) // only 2 is ticked: 3 does not campaign
	nw.tick(2, 1)       // 2 campaigns; its pre-vote to 3 is lost
	if nw.r(2).Role() != PreCandidate || nw.countSent(MsgPreVote, 2, 3) != 1 {
		t.Fatalf("2 is %v after sending %d pre-votes to 3", nw.r(2).Role(), nw.countSent(MsgPreVote, 2, 3))
	}
	delete(nw.cut, [2]uint64{2, 3})
	nw.tick(2, voteResendTicks-1)
	if nw.r(2).Role() != PreCandidate || nw.countSent(MsgPreVote, 2, 3) != 1 {
		t.Fatalf("asked again too early: 2 is %v, %d pre-votes to 3", nw.r(2).Role(), nw.countSent(MsgPreVote, 2, 3))
	}
	nw.tick(2, 1)
	if nw.r(2).Role() != Leader || nw.countSent(MsgPreVote, 2, 3) != 2 {
		t.Fatalf("after %d ticks 2 is %v, %d pre-votes to 3", voteResendTicks, nw.r(2).Role(), nw.countSent(MsgPreVote, 2, 3))
	}
	// the killed member was asked each time, as it had not answered; it is asked no more
	if got := nw.countSent(MsgPreVote, 2, 1); got != 2 {
		t.Fatalf("%d pre-votes to the dead member, want 2", got)
	}
	nw.propose(2, "b")
	if got := nw.members[3].appliedData(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("member 3 applied %v", got)
	}
}

// A hint only one follower believes deposes no live leader: the other follower still
// honours the lease and refuses the pre-vote.
func TestPeerDownOnOneFollowerKeepsLiveLeader(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.elect(1)
	nw.r(2).PeerDown(1)
	nw.tick(2, 3)
	if nw.r(2).Role() != PreCandidate {
		t.Fatalf("member 2 is %v, want a pre-candidate", nw.r(2).Role())
	}
	nw.tick(1, 1) // the leader's heartbeat
	nw.expectLeader(1)
	if term := nw.r(2).Term(); term != 1 {
		t.Fatalf("term moved to %d", term)
	}
}

// A restarted member may have acknowledged a lease before it crashed: it grants no vote
// for its first election timeout.
func TestRestartedMemberGrantsNoVoteForAnElectionTimeout(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.elect(1)
	r := nw.restart(2).r
	vote := Message{Type: MsgPreVote, From: 3, To: 2, Term: 2, Index: 10, LogTerm: 1}
	r.Step(vote)
	if msgs := nw.process(2); len(msgs) != 0 {
		t.Fatalf("restarted member answered a pre-vote at once: %v", msgs)
	}
	for range r.cfg.ElectionTicks {
		r.Tick()
	}
	nw.process(2)
	r.Step(vote)
	msgs := nw.process(2)
	if len(msgs) != 1 || msgs[0].Type != MsgPreVoteResp || msgs[0].Reject {
		t.Fatalf("after an election timeout: %+v", msgs)
	}
}

// Check-quorum: a leader that cannot reach a majority for an election timeout steps down.
func TestLeaderStepsDownWithoutQuorum(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.elect(1)
	nw.isolate(1)
	et := nw.r(1).cfg.ElectionTicks
	ticks := 0
	for nw.r(1).Role() == Leader && ticks <= 4*et {
		nw.tick(1, 1)
		ticks++
	}
	// It outlasts one quiet period (followers held up by GC are quiet that long), and
	// steps down at the end of the second in a row, or the third when it was cut off
	// early in a period that still counted the followers from before.
	if ticks <= 2*et || ticks > 3*et {
		t.Fatalf("isolated leader stepped down after %d ticks, want (%d, %d]", ticks, 2*et, 3*et)
	}
}

// Silent names the members a leader has not heard from for a whole check-quorum period
// and since (the offload engine's terms leave them out): not a member merely quiet
// for part of a period, and not one any more once it answers.
func TestLeaderKnowsWhichMembersAreSilent(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.elect(1)
	et := nw.r(1).cfg.ElectionTicks
	nw.isolate(3)
	silentAfter := 0
	for ticks := 1; ticks <= 3*et && silentAfter == 0; ticks++ {
		nw.tick(1, 1)
		if nw.r(1).Silent(3) {
			silentAfter = ticks
		}
		if nw.r(1).Silent(2) || nw.r(1).Silent(1) {
			t.Fatalf("after %d ticks: member 2 or the leader itself silent", ticks)
		}
	}
	// Cut off just after the election, which counts as hearing from everyone, 3 is
	// silent once the period after the one it was cut off in has ended.
	if silentAfter <= et || silentAfter > 2*et {
		t.Fatalf("member 3 silent after %d ticks, want (%d, %d]", silentAfter, et, 2*et)
	}
	nw.heal()
	nw.tick(1, 1) // a heartbeat, and 3's answer
	if nw.r(1).Silent(3) {
		t.Fatal("member 3 still silent after it answered")
	}
	if nw.r(2).Silent(1) || nw.r(2).Silent(3) {
		t.Fatal("a follower calls members silent")
	}
}

// One quiet period between active ones deposes no one.
func TestLeaderSurvivesOneQuietPeriod(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.elect(1)
	et := nw.r(1).cfg.ElectionTicks
	for range 3 {
		nw.isolate(1)
		nw.tick(1, 2*et-1)
		nw.heal()
		nw.tick(1, 1)
		if nw.r(1).Role() != Leader {
			t.Fatal("a leader quiet for one period at a time stepped down")
		}
	}
}

// §5.3: entries are replicated and committed once a majority holds them; every member
// applies the same entries in the same order.
func TestReplicationCommitsAndApplies(t *testing.T) {
	nw := newNetwork(t, 5)
	nw.elect(1)
	nw.isolate(5)
	nw.propose(1, "a", "b", "c")
	for _, id := range []uint64{1, 2, 3, 4} {
		if got := nw.members[id].appliedData(); !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Fatalf("member %d applied %q", id, got)
		}
	}
	if got := nw.members[5].appliedData(); len(got) != 0 {
		t.Fatalf("isolated member applied %q", got)
	}
	nw.heal()
	nw.tickAll(1)
	if got := nw.members[5].appliedData(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("member 5 after heal applied %q", got)
	}
}

// electedWithNobodyWaiting is three members, 1 leading, whose followers wait for no
// commit, as the leader knows from their answers to a heartbeat.
func electedWithNobodyWaiting(t *testing.T) *network {
	nw := newNetwork(t, 3)
	nw.elect(1)
	nw.r(2).SetWaiting(false)
	nw.r(3).SetWaiting(false)
	nw.tickAll(1)
	return nw
}

// A commit that no MsgApp carries reaches at once only the members whose driver waits
// for one (SetWaiting: a follower that forwarded a write); the others learn of it from
// the next heartbeat, which saves them a message and a wake-up per idle commit.
func TestLeaderTellsOnlyWaitingMembersOfCommitAtOnce(t *testing.T) {
	nw := electedWithNobodyWaiting(t)
	idx := nw.propose(1, "a")
	for _, id := range []uint64{2, 3} {
		if c := nw.r(id).Committed(); c >= idx {
			t.Fatalf("member %d, which waits for nothing, was told of commit %d at once", id, c)
		}
	}
	nw.tick(1, 1) // a heartbeat
	for _, id := range []uint64{2, 3} {
		if c := nw.r(id).Committed(); c != idx {
			t.Fatalf("member %d committed %d after a heartbeat, want %d", id, c, idx)
		}
	}

	nw.r(3).SetWaiting(true)
	nw.tickAll(1)
	idx = nw.propose(1, "b")
	if c := nw.r(3).Committed(); c != idx {
		t.Fatalf("waiting member committed %d, want %d at once", c, idx)
	}
	if c := nw.r(2).Committed(); c >= idx {
		t.Fatalf("member 2 was told of commit %d at once", c)
	}
}

// The MsgApps to a member that waits for a commit say so (Message.Waiting), so that a
// driver does not hold them back for a lazy peer: the leader knows it from the
// member's answers, or from PeerWaits before it proposes writes that member forwarded
// (its answers would say so only after the MsgApps it needs). An answer saying it
// waits for nothing clears it.
func TestMsgAppSaysTheReceiverWaits(t *testing.T) {
	nw := electedWithNobodyWaiting(t)
	// waits proposes data and returns, by member, the Waiting of the MsgApps carrying it.
	waits := func(data string) map[uint64]bool {
		t.Helper()
		if _, err := nw.r(1).Propose(0, []byte(data)); err != nil {
			t.Fatal(err)
		}
		got := map[uint64]bool{}
		for _, m := range nw.process(1) {
			if m.Type == MsgApp && len(m.Entries) > 0 {
				got[m.To] = m.Waiting
			}
			nw.r(m.To).Step(m)
		}
		nw.settle()
		return got
	}
	if got := waits("a"); len(got) != 2 || got[2] || got[3] {
		t.Fatalf("nobody waits: MsgApps %v, want two saying no", got)
	}
	nw.r(1).PeerWaits(3)
	nw.r(2).PeerWaits(1) // a follower's PeerWaits changes nothing
	if got := waits("b"); len(got) != 2 || got[2] || !got[3] {
		t.Fatalf("after PeerWaits(3): MsgApps %v, want only the one to 3 saying it waits", got)
	}
	// 3's answer to "b" said it waits for nothing
	if got := waits("c"); len(got) != 2 || got[2] || got[3] {
		t.Fatalf("after 3 answered: MsgApps %v, want two saying no", got)
	}
	nw.r(2).SetWaiting(true)
	nw.tickAll(1)
	if got := waits("d"); len(got) != 2 || !got[2] || got[3] {
		t.Fatalf("2 waits: MsgApps %v, want only the one to 2 saying it waits", got)
	}
}

// §5.4.2 (Figure 8): a leader does not commit an entry of an earlier term by counting
// replicas; it commits it only together with an entry of its own term.
func TestLeaderCommitsOnlyCurrentTermByCounting(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.elect(1)
	nw.isolate(1)
	nw.tickAll(nw.r(1).cfg.ElectionTicks)
	nw.elect(2)
	nw.heal()
	// Leader 2 (term 2) ends its log with an entry of term 1 that a majority holds, as in
	// Figure 8 (c): counting replicas must not commit it.
	r := nw.r(2)
	old := r.log.committed
	r.log.append(Entry{Index: r.log.lastIndex() + 1, Term: r.term - 1})
	r.prs[3].match = r.log.lastIndex()
	r.prs[r.id].match = r.log.lastIndex()
	if r.maybeCommit() || r.log.committed != old {
		t.Fatal("leader committed an entry of an earlier term by counting replicas")
	}
	// An entry of its own term on top commits both.
	r.log.append(Entry{Index: r.log.lastIndex() + 1, Term: r.term})
	r.prs[3].match = r.log.lastIndex()
	r.prs[r.id].match = r.log.lastIndex()
	if !r.maybeCommit() || r.log.committed != r.log.lastIndex() {
		t.Fatal("entry of the current term held by a majority not committed")
	}
}

// §5.3: a follower's conflicting uncommitted suffix is replaced by the leader's entries,
// and the leader finds the point of divergence in a few round trips, not one per entry.
func TestConflictingSuffixReplacedWithFewProbes(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.elect(1)
	nw.propose(1, "base")
	// 1 writes 200 entries nobody gets, then loses leadership.
	nw.isolate(1)
	for i := 0; i < 200; i++ {
		if _, err := nw.r(1).Propose(0, []byte("lost")); err != nil {
			t.Fatal(err)
		}
	}
	nw.settle()
	nw.tickAll(nw.r(1).cfg.ElectionTicks)
	nw.elect(2)
	nw.propose(2, "new1", "new2")
	nw.heal()
	nw.sent = nil
	nw.tickAll(2)
	if got := nw.members[1].appliedData(); !slices.Equal(got, []string{"base", "new1", "new2"}) {
		t.Fatalf("member 1 applied %q", got)
	}
	if last := nw.r(1).LastIndex(); last != nw.r(2).LastIndex() {
		t.Fatalf("member 1 last %d, leader %d", last, nw.r(2).LastIndex())
	}
	if rej := countRejects(nw.sent, 1); rej > 3 {
		t.Fatalf("%d rejections to find the divergence point", rej)
	}
}

func countRejects(msgs []Message, from uint64) int {
	n := 0
	for _, m := range msgs {
		if m.Type == MsgAppResp && m.From == from && m.Reject {
			n++
		}
	}
	return n
}

// A heartbeat never makes a follower commit beyond what it is known to hold.
func TestHeartbeatCommitBoundedByMatch(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.elect(1)
	nw.drop[MsgApp] = true
	nw.propose(1, "x")
	nw.tickAll(1)
	for _, m := range nw.sent {
		if m.Type == MsgHeartbeat && m.Commit > nw.r(1).MatchIndex(m.To) {
			t.Fatalf("heartbeat to %d carries commit %d beyond match %d", m.To, m.Commit, nw.r(1).MatchIndex(m.To))
		}
	}
}

func TestProposeOnFollowerFails(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.elect(1)
	if _, err := nw.r(2).Propose(0, []byte("x")); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("got %v", err)
	}
}

// The log's clock never runs backwards, even when a new leader's clock is behind.
func TestEntryTimesNeverDecrease(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.elect(1)
	if _, err := nw.r(1).Propose(5000, []byte("a")); err != nil {
		t.Fatal(err)
	}
	nw.settle()
	nw.isolate(1)
	nw.tickAll(nw.r(1).cfg.ElectionTicks)
	nw.elect(2)
	if _, err := nw.r(2).Propose(1000, []byte("b")); err != nil {
		t.Fatal(err)
	}
	nw.settle()
	var last int64
	for _, e := range nw.members[2].applied {
		if e.Time < last {
			t.Fatalf("entry %d time %d after %d", e.Index, e.Time, last)
		}
		last = e.Time
	}
	if last != 5000 {
		t.Fatalf("last time %d, want 5000 (clamped)", last)
	}
}

// §6.4: ReadIndex answers with the commit index once a majority confirms leadership with
// a heartbeat round sent after the request.
func TestReadIndexNeedsQuorumRound(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.elect(1)
	nw.propose(1, "a")
	nw.isolate(1)
	if err := nw.r(1).ReadIndex(7, false); err != nil {
		t.Fatal(err)
	}
	nw.settle()
	if len(nw.members[1].reads) != 0 {
		t.Fatalf("read answered without a quorum: %+v", nw.members[1].reads)
	}
	nw.heal()
	nw.tick(1, 1)
	reads := nw.members[1].reads
	if len(reads) != 1 || reads[0].Ctx != 7 || reads[0].Lost || reads[0].Index != nw.r(1).Committed() {
		t.Fatalf("reads %+v, commit %d", reads, nw.r(1).Committed())
	}
}

// Reads arriving before the new leader's no-op commits wait for it: before then the
// leader does not know the commit index.
func TestReadIndexWaitsForNoop(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.drop[MsgAppResp] = true
	nw.elect(1)
	r := nw.r(1)
	if r.Committed() >= r.noopIndex {
		t.Fatal("setup: no-op should not be committed")
	}
	if err := r.ReadIndex(1, true); err != nil {
		t.Fatal(err)
	}
	nw.settle()
	if len(nw.members[1].reads) != 0 {
		t.Fatal("read answered before the no-op committed")
	}
	delete(nw.drop, MsgAppResp)
	nw.tick(1, 1)
	reads := nw.members[1].reads
	if len(reads) != 1 || reads[0].Index < r.noopIndex {
		t.Fatalf("reads %+v, no-op at %d", reads, r.noopIndex)
	}
}

// Losing leadership fails pending reads instead of leaving them hanging.
func TestPendingReadsLostOnStepDown(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.elect(1)
	nw.isolate(1)
	if err := nw.r(1).ReadIndex(9, false); err != nil {
		t.Fatal(err)
	}
	nw.tick(1, 3*nw.r(1).cfg.ElectionTicks)
	reads := nw.members[1].reads
	if len(reads) != 1 || !reads[0].Lost || reads[0].Ctx != 9 {
		t.Fatalf("reads %+v", reads)
	}
}

// §6.4.1: a lease lets the leader answer reads at once while a majority acknowledged it
// recently; it expires before any other member can have been elected.
func TestLeaseReads(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.elect(1)
	nw.tickAll(1)
	r := nw.r(1)
	if !r.LeaseValid() {
		t.Fatal("fresh leader with acknowledged heartbeats has no lease")
	}
	if err := r.ReadIndex(3, true); err != nil {
		t.Fatal(err)
	}
	if rs := r.readStates; len(rs) != 1 || rs[0].Ctx != 3 {
		t.Fatalf("lease read not answered at once: %+v", rs)
	}
	nw.isolate(1)
	ticks := 0
	for r.LeaseValid() {
		nw.tick(1, 1)
		ticks++
	}
	if ticks > r.cfg.LeaseTicks || ticks >= r.cfg.ElectionTicks {
		t.Fatalf("lease outlived %d ticks (lease %d, election %d)", ticks, r.cfg.LeaseTicks, r.cfg.ElectionTicks)
	}
}

// LeaseTicksLeft is the lease a node serves reads by off its loop: it counts down one
// per tick with the leader cut off, reaches 0 exactly when LeaseValid turns false, and
// is 0 at once when a transfer begins.
func TestLeaseTicksLeft(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.elect(1)
	nw.tickAll(1)
	r := nw.r(1)
	left := r.LeaseTicksLeft()
	if left == 0 || left > uint64(r.cfg.LeaseTicks) {
		t.Fatalf("fresh leader's lease: %d ticks (LeaseTicks %d)", left, r.cfg.LeaseTicks)
	}
	nw.isolate(1)
	for want := left; want > 0; want-- {
		if got := r.LeaseTicksLeft(); got != want || !r.LeaseValid() {
			t.Fatalf("lease %d ticks, want %d (valid %v)", got, want, r.LeaseValid())
		}
		nw.tick(1, 1)
	}
	if got := r.LeaseTicksLeft(); got != 0 || r.LeaseValid() {
		t.Fatalf("lease %d ticks after it ran out (valid %v)", got, r.LeaseValid())
	}
	nw.heal()
	nw.tickAll(r.cfg.HeartbeatTicks)
	nw.settle()
	if r.LeaseTicksLeft() == 0 {
		t.Fatal("no lease after the followers acknowledged a heartbeat again")
	}
	if err := r.TransferLeader(2); err != nil {
		t.Fatal(err)
	}
	if got := r.LeaseTicksLeft(); got != 0 {
		t.Fatalf("lease of %d ticks during a transfer", got)
	}
}

// §3.10: leadership transfer brings the transferee up to date, then it campaigns at once
// and wins; proposals are refused meanwhile.
func TestTransferLeadership(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.elect(1)
	nw.isolate(3)
	nw.propose(1, "a")
	nw.heal()
	nw.cut[[2]uint64{1, 3}] = true // 3 is behind and stays behind for now
	if err := nw.r(1).TransferLeader(3); err != nil {
		t.Fatal(err)
	}
	nw.settle()
	if _, err := nw.r(1).Propose(0, []byte("x")); !errors.Is(err, ErrTransferring) {
		t.Fatalf("proposal during transfer: %v", err)
	}
	delete(nw.cut, [2]uint64{1, 3})
	nw.tick(1, 1)
	nw.expectLeader(3)
	if got := nw.members[3].appliedData(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("new leader applied %q", got)
	}
}

// A transfer that does not happen within an election timeout is abandoned.
func TestTransferAbortsAfterTimeout(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.elect(1)
	nw.isolate(3)
	if err := nw.r(1).TransferLeader(3); err != nil {
		t.Fatal(err)
	}
	nw.tick(1, nw.r(1).cfg.ElectionTicks)
	if nw.r(1).Transferee() != None {
		t.Fatal("transfer not abandoned")
	}
	if _, err := nw.r(1).Propose(0, []byte("x")); err != nil {
		t.Fatal(err)
	}
}

// §4.2.1: a new member joins as a learner (replicated to, not counted), is promoted, and
// a removed member stops counting.
func TestMembershipChanges(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.elect(1)
	nw.propose(1, "a")
	nw.start(4, Membership{}) // knows nothing: it learns the membership from the log
	if _, err := nw.r(1).ProposeConfChange(0, ConfChange{Type: AddLearner, Node: 4, Addr: "n4"}); err != nil {
		t.Fatal(err)
	}
	nw.settle()
	nw.tickAll(1)
	m := nw.r(1).Membership()
	if !m.IsLearner(4) || m.Addrs[4] != "n4" || m.IsVoter(4) {
		t.Fatalf("membership %+v", m)
	}
	if got := nw.members[4].appliedData(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("learner applied %q", got)
	}
	if nw.r(4).Membership().IsLearner(4) != true {
		t.Fatal("learner did not learn its own membership from the log")
	}
	// A learner never campaigns.
	nw.tick(4, 100)
	if nw.r(4).Role() != Follower {
		t.Fatal("learner campaigned")
	}
	if _, err := nw.r(1).ProposeConfChange(0, ConfChange{Type: PromoteVoter, Node: 4}); err != nil {
		t.Fatal(err)
	}
	nw.settle()
	if m := nw.r(1).Membership(); !m.IsVoter(4) || len(m.Voters) != 4 {
		t.Fatalf("after promotion %+v", m)
	}
	// With four voters a quorum is three: with 2 and 3 cut off nothing commits.
	nw.isolate(2)
	nw.isolate(3)
	before := nw.r(1).Committed()
	if _, err := nw.r(1).Propose(0, []byte("b")); err != nil {
		t.Fatal(err)
	}
	nw.settle()
	if nw.r(1).Committed() != before {
		t.Fatal("committed with 2 of 4 voters")
	}
	nw.heal()
	nw.tickAll(1)
	if _, err := nw.r(1).ProposeConfChange(0, ConfChange{Type: RemoveNode, Node: 3}); err != nil {
		t.Fatal(err)
	}
	nw.settle()
	if m := nw.r(1).Membership(); m.IsVoter(3) || len(m.Voters) != 3 {
		t.Fatalf("after removal %+v", m)
	}
}

// Only one membership change at a time, and none before the leader's no-op commits.
func TestConfChangeOneAtATime(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.drop[MsgAppResp] = true
	nw.elect(1)
	if _, err := nw.r(1).ProposeConfChange(0, ConfChange{Type: AddLearner, Node: 4}); !errors.Is(err, ErrConfPending) {
		t.Fatalf("before the no-op committed: %v", err)
	}
	delete(nw.drop, MsgAppResp)
	nw.tickAll(1)
	nw.cut[[2]uint64{2, 1}] = true
	nw.cut[[2]uint64{3, 1}] = true
	if _, err := nw.r(1).ProposeConfChange(0, ConfChange{Type: AddLearner, Node: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := nw.r(1).ProposeConfChange(0, ConfChange{Type: AddLearner, Node: 5}); !errors.Is(err, ErrConfPending) {
		t.Fatalf("second change while the first is uncommitted: %v", err)
	}
	for _, bad := range []ConfChange{{Type: RemoveNode, Node: 9}, {Type: PromoteVoter, Node: 2}, {Type: AddLearner, Node: 0}} {
		nw.heal()
		nw.tickAll(1)
		if _, err := nw.r(1).ProposeConfChange(0, bad); !errors.Is(err, ErrBadConfChange) {
			t.Fatalf("%+v: %v", bad, err)
		}
	}
}

// §4.2.2: a leader that removes itself steps down once the removal commits.
func TestLeaderRemovingItselfStepsDown(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.elect(1)
	if _, err := nw.r(1).ProposeConfChange(0, ConfChange{Type: RemoveNode, Node: 1}); err != nil {
		t.Fatal(err)
	}
	nw.settle()
	if nw.r(1).Role() == Leader {
		t.Fatal("removed leader still leads")
	}
	nw.tickAll(3 * nw.r(2).cfg.ElectionTicks)
	if nw.r(2).Role() != Leader && nw.r(3).Role() != Leader {
		t.Fatal("the remaining members elected no leader")
	}
	if nw.r(1).Role() != Follower {
		t.Fatal("removed member campaigned")
	}
}

// A removal shrinks the quorum the moment it commits: an entry after it that a majority
// of the remaining voters holds commits then, not at the next acknowledgement (which a
// quiet cluster might not send for a while). Four voters, 4 cut off: the removal of 4
// needs 1, 2 and 3; the entry after it is held by 1 and 2 only, a majority of three.
func TestRemovalCommitsWhatTheSmallerQuorumHolds(t *testing.T) {
	nw := newNetwork(t, 4)
	nw.elect(1)
	nw.propose(1, "a")
	nw.isolate(4)
	nw.drop[MsgAppResp] = true // the acknowledgements are delivered by hand below
	r := nw.r(1)
	conf, err := r.ProposeConfChange(0, ConfChange{Type: RemoveNode, Node: 4})
	if err != nil {
		t.Fatal(err)
	}
	nw.settle()
	nw.cut[[2]uint64{1, 3}] = true // 3 holds the removal, not what follows
	x := nw.propose(1, "x")
	if x != conf+1 || nw.r(2).LastIndex() != x || nw.r(3).LastIndex() != conf {
		t.Fatalf("entry %d after the removal at %d; 2 holds %d, 3 holds %d", x, conf, nw.r(2).LastIndex(), nw.r(3).LastIndex())
	}
	ackFrom := func(id, index uint64) {
		r.Step(Message{Type: MsgAppResp, From: id, To: 1, Term: r.Term(), Index: index})
		nw.process(1)
	}
	ackFrom(2, x)
	if r.Committed() >= conf {
		t.Fatalf("committed %d with two of four voters holding %d", r.Committed(), conf)
	}
	ackFrom(3, conf)
	if r.MembershipAt(r.Committed()).IsVoter(4) {
		t.Fatalf("the removal at %d is not committed (commit %d)", conf, r.Committed())
	}
	if r.Committed() != x {
		t.Fatalf("commit %d once 4 is removed; want %d, which 1 and 2 of the three voters hold", r.Committed(), x)
	}
}

// A leadership transfer to a member whose removal commits meanwhile is abandoned: the
// leader takes proposals again at once instead of refusing them until the transfer
// times out.
func TestRemovingTheTransfereeEndsTheTransfer(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.elect(1)
	nw.isolate(3)
	nw.drop[MsgAppResp] = true
	r := nw.r(1)
	if _, err := r.ProposeConfChange(0, ConfChange{Type: RemoveNode, Node: 3}); err != nil {
		t.Fatal(err)
	}
	nw.settle()
	if err := r.TransferLeader(3); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Propose(0, []byte("x")); !errors.Is(err, ErrTransferring) {
		t.Fatalf("proposal during the transfer: %v", err)
	}
	r.Step(Message{Type: MsgAppResp, From: 2, To: 1, Term: r.Term(), Index: r.LastIndex()})
	nw.process(1)
	if r.MembershipAt(r.Committed()).IsVoter(3) {
		t.Fatal("the removal of 3 did not commit")
	}
	if r.Role() != Leader {
		t.Fatalf("the leader is %v after removing the transferee", r.Role())
	}
	if _, err := r.Propose(0, []byte("x")); err != nil {
		t.Fatalf("proposal after the transferee's removal: %v", err)
	}
}

// §5 (log compaction): a member whose next entry was compacted away gets the snapshot,
// installs it, and replication continues from there.
func TestSnapshotCatchUp(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.elect(1)
	nw.isolate(3)
	for i := 0; i < 20; i++ {
		nw.propose(1, "v")
	}
	r := nw.r(1)
	meta := SnapshotMeta{Index: r.log.applied, Term: r.term, Membership: r.MembershipAt(r.log.applied)}
	r.Compact(meta, 0)
	if _, ok := r.TermAt(2); ok {
		t.Fatal("log not compacted")
	}
	nw.heal()
	nw.sent = nil
	nw.tick(1, 1)
	if nw.countSent(MsgSnap, 1, 3) != 1 {
		t.Fatalf("snapshot sent %d times", nw.countSent(MsgSnap, 1, 3))
	}
	if d := nw.members[3].disk; d.snap == nil || d.snap.Index != meta.Index {
		t.Fatalf("member 3 did not persist the snapshot: %+v", d.snap)
	}
	nw.r(1).ReportSnapshot(3, false)
	nw.propose(1, "after")
	if got := nw.members[3].appliedData(); !slices.Equal(got, []string{"after"}) {
		t.Fatalf("after the snapshot member 3 applied %q", got)
	}
	if nw.r(3).Committed() != nw.r(1).Committed() {
		t.Fatalf("member 3 commit %d, leader %d", nw.r(3).Committed(), nw.r(1).Committed())
	}
}

// A member restarts from its disk: term, vote and log survive, and committed entries
// after the snapshot are handed out again for the state machine to replay.
func TestRestartRecoversPersistedState(t *testing.T) {
	nw := newNetwork(t, 3)
	nw.elect(1)
	nw.propose(1, "a", "b")
	before := nw.r(2)
	m := nw.restart(2)
	if m.r.Term() != before.Term() || m.r.LastIndex() != before.LastIndex() || m.r.Committed() != before.Committed() {
		t.Fatalf("after restart: %v, before term %d last %d commit %d", m, before.Term(), before.LastIndex(), before.Committed())
	}
	nw.process(2)
	if got := m.appliedData(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("replayed %q", got)
	}
}

func TestConfChangeCodec(t *testing.T) {
	for _, cc := range []ConfChange{{AddLearner, 4, "127.0.0.1:7404"}, {PromoteVoter, 1 << 40, ""}, {RemoveNode, 2, "x"}} {
		got, err := DecodeConfChange(EncodeConfChange(cc))
		if err != nil || got != cc {
			t.Fatalf("%+v → %+v, %v", cc, got, err)
		}
	}
	for _, bad := range [][]byte{nil, {1}, {9, 1}, {1, 0}, {1, 0x80}} {
		if _, err := DecodeConfChange(bad); err == nil {
			t.Fatalf("%x decoded", bad)
		}
	}
}

func TestMessageCodecRoundTrip(t *testing.T) {
	msgs := []Message{
		{Type: MsgApp, From: 1, To: 2, Term: 3, Index: 10, LogTerm: 2, Commit: 9, Context: 77,
			Entries: []Entry{{Index: 11, Term: 3, Time: -5, Data: []byte("set k v")}, {Index: 12, Term: 3, Type: EntryConf, Data: EncodeConfChange(ConfChange{AddLearner, 4, "a:1"})}}},
		{Type: MsgAppResp, From: 2, To: 1, Term: 3, Index: 10, Reject: true, Hint: 7, LogTerm: 1},
		{Type: MsgHeartbeatResp, From: 3, To: 1, Term: 3, Index: 12, Context: 4, Waiting: true},
		{Type: MsgAppResp, From: 3, To: 1, Term: 3, Index: 12, Reject: true, Waiting: true},
		{Type: MsgSnap, From: 1, To: 3, Term: 4, Snapshot: &SnapshotMeta{Index: 100, Term: 3, Time: 1700000000000,
			Membership: Membership{Voters: []uint64{1, 2, 3}, Learners: []uint64{9}, Addrs: map[uint64]string{1: "x", 9: "y"}}}},
		{Type: MsgTimeoutNow, From: 1, To: 2, Term: 1 << 60},
	}
	for _, m := range msgs {
		b := AppendMessage(nil, &m)
		got, err := ParseMessage(b)
		if err != nil {
			t.Fatalf("%v: %v", m.Type, err)
		}
		if again := AppendMessage(nil, &got); string(again) != string(b) {
			t.Fatalf("%v: round trip differs:\n%x\n%x", m.Type, b, again)
		}
		for cut := range b {
			if _, err := ParseMessage(b[:cut]); err == nil {
				t.Fatalf("%v: truncated to %d bytes parsed", m.Type, cut)
			}
		}
	}
}

func FuzzParseMessage(f *testing.F) {
	f.Add(AppendMessage(nil, &Message{Type: MsgApp, From: 1, To: 2, Term: 1, Entries: []Entry{{Index: 1, Term: 1, Data: []byte("x")}}}))
	f.Add(AppendMessage(nil, &Message{Type: MsgSnap, From: 1, To: 2, Term: 1, Snapshot: &SnapshotMeta{Index: 5, Membership: Membership{Voters: []uint64{1}, Addrs: map[uint64]string{1: "a"}}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseMessage(b)
		if err != nil {
			return
		}
		// Whatever parses re-encodes to something that parses to the same message.
		again, err := ParseMessage(AppendMessage(nil, &m))
		if err != nil {
			t.Fatalf("re-encoded message does not parse: %v", err)
		}
		if string(AppendMessage(nil, &again)) != string(AppendMessage(nil, &m)) {
			t.Fatal("round trip not stable")
		}
	})
}

// §5.3: a follower commits min(leaderCommit, index of last new entry): entries past what
// the leader's message matched may be a stale leader's and must not commit.
func TestFollowerCommitsOnlyWhatTheMessageMatched(t *testing.T) {
	nw := newNetwork(t, 3)
	r := nw.r(2)
	// 2 holds entries 1..3 of term 1; the leader of term 2 matched only index 1.
	r.log.append(Entry{Index: 1, Term: 1}, Entry{Index: 2, Term: 1}, Entry{Index: 3, Term: 1})
	r.Step(Message{Type: MsgApp, From: 1, To: 2, Term: 2, Index: 1, LogTerm: 1, Commit: 3})
	if c := r.Committed(); c != 1 {
		t.Fatalf("committed %d, want 1", c)
	}
}
