package raft

import (
	"errors"
	"slices"
)

// None is "no node": no vote cast, no leader known.
const None uint64 = 0

// EntryType says how the driver treats an entry's Data.
type EntryType uint8

const (
	// EntryNormal carries a state-machine command batch (empty for a leader's no-op).
	EntryNormal EntryType = iota
	// EntryConf carries an encoded ConfChange; the core applies it when it commits.
	EntryConf
	// EntryForwarded is a state-machine batch that a follower forwarded to the leader
	// (MsgForward). The core treats it as EntryNormal; its Data starts with the origin
	// member and the origin's sequence number (AppendForwarded), so that the origin can
	// hand the entry's replies to the client that is waiting on it.
	EntryForwarded
)

// Entry is one log entry: its position, the term that created it, the leader's clock
// when it was proposed (unix ms, never decreasing along the log) and its payload.
type Entry struct {
	Index uint64
	Term  uint64
	Time  int64
	Type  EntryType
	Data  []byte
}

// HardState is what must be on disk before any message that depends on it is sent
// (§5.1: currentTerm and votedFor survive a crash), plus the commit index.
type HardState struct {
	Term, Vote, Commit uint64
}

// Membership is a cluster configuration. Addrs is opaque to the core: the driver keeps
// each member's network addresses there, so that they replicate with the configuration.
type Membership struct {
	Voters   []uint64 // sorted
	Learners []uint64 // sorted; replicated to, never counted in a quorum
	Addrs    map[uint64]string
}

// IsVoter reports whether id votes in m.
func (m Membership) IsVoter(id uint64) bool {
	_, ok := slices.BinarySearch(m.Voters, id)
	return ok
}

// IsLearner reports whether id is a learner in m.
func (m Membership) IsLearner(id uint64) bool {
	_, ok := slices.BinarySearch(m.Learners, id)
	return ok
}

// Clone returns a deep copy.
func (m Membership) Clone() Membership {
	c := Membership{Voters: slices.Clone(m.Voters), Learners: slices.Clone(m.Learners)}
	if m.Addrs != nil {
		c.Addrs = make(map[uint64]string, len(m.Addrs))
		for k, v := range m.Addrs {
			c.Addrs[k] = v
		}
	}
	return c
}

// quorum is the number of voters that form a majority.
func (m Membership) quorum() int { return len(m.Voters)/2 + 1 }

// ConfChangeType is the kind of one single-server membership change (§4.1 of Ongaro's
// dissertation: one server at a time, so old and new majorities always overlap).
type ConfChangeType uint8

const (
	// AddLearner adds a node that receives the log but does not vote. New nodes join
	// this way and are promoted once they have caught up, so a slow newcomer never
	// stalls commits.
	AddLearner ConfChangeType = iota + 1
	// PromoteVoter makes a learner a voter (or adds a voter directly).
	PromoteVoter
	// RemoveNode removes a voter or a learner.
	RemoveNode
)

// ConfChange is one membership change; Addr (opaque) is stored in Membership.Addrs.
type ConfChange struct {
	Type ConfChangeType
	Node uint64
	Addr string
}

// SnapshotMeta describes a snapshot: the last entry it covers and the membership as of
// that entry. The snapshot's bytes are the driver's business.
type SnapshotMeta struct {
	Index, Term uint64
	Time        int64 // the covered entry's clock, so later entries stay monotonic
	Membership  Membership
}

// MsgType is the kind of a Message.
type MsgType uint8

const (
	// MsgApp is AppendEntries: Index/LogTerm are prevLogIndex/prevLogTerm, Entries
	// follow, Commit is the leader's commit index.
	MsgApp MsgType = iota + 1
	// MsgAppResp answers MsgApp and MsgSnap. Accepted: Index is the last index known to
	// match. Rejected: Index is the rejected prevLogIndex and Hint/LogTerm say where the
	// follower's log may match (see raftLog.conflictHint).
	MsgAppResp
	// MsgHeartbeat asserts leadership; Commit is min(leader commit, follower match),
	// Context a read-round number and Index the last entry sent to the follower, both
	// echoed in the response.
	MsgHeartbeat
	MsgHeartbeatResp
	// MsgVote is RequestVote: Index/LogTerm are the candidate's last index and term.
	// Context == ctxTransfer marks a campaign started by a leadership transfer, which
	// voters grant even while they believe a leader is alive.
	MsgVote
	MsgVoteResp
	// MsgPreVote asks whether a vote at Term would be granted, without anyone changing
	// term (§9.6): a partitioned node that comes back cannot depose a healthy leader.
	MsgPreVote
	MsgPreVoteResp
	// MsgSnap tells a follower to install the snapshot described by Snapshot; the driver
	// ships the bytes (in chunks) and delivers the message once they have all arrived.
	MsgSnap
	// MsgTimeoutNow makes the receiver campaign at once (leadership transfer, §3.10).
	MsgTimeoutNow
	// MsgForward carries proposals from a follower to the leader: Entries hold their
	// data, Context the sequence number of the first (the rest follow in order). It is
	// the drivers' business: the core never sees it.
	MsgForward
	// MsgForwardResp refuses forwarded proposals the receiver could not propose (it does
	// not lead): Context and Index are the first sequence number and the count.
	MsgForwardResp
)

var msgNames = [...]string{"?", "MsgApp", "MsgAppResp", "MsgHeartbeat", "MsgHeartbeatResp",
	"MsgVote", "MsgVoteResp", "MsgPreVote", "MsgPreVoteResp", "MsgSnap", "MsgTimeoutNow",
	"MsgForward", "MsgForwardResp"}

func (t MsgType) String() string {
	if int(t) < len(msgNames) {
		return msgNames[t]
	}
	return "MsgType(?)"
}

// ctxTransfer in a vote request's Context marks a transfer campaign.
const ctxTransfer = 1

// Message is what cores exchange. Fields a type does not use are zero.
type Message struct {
	Type     MsgType
	From, To uint64
	Term     uint64
	Index    uint64
	LogTerm  uint64
	Commit   uint64
	Hint     uint64
	Context  uint64
	Reject   bool
	// Waiting, on a MsgAppResp or MsgHeartbeatResp, says that the sender's driver waits
	// for a commit (Raft.SetWaiting): the leader tells it of one at once. On a MsgApp it
	// says the leader knows the receiver waits: a driver must not hold the message back
	// (a lazy peer's, TCPTransport.SetLazy).
	Waiting  bool
	Entries  []Entry
	Snapshot *SnapshotMeta
}

// Role is a node's part in the current term.
type Role uint8

const (
	Follower Role = iota
	PreCandidate
	Candidate
	Leader
)

func (r Role) String() string {
	return [...]string{"follower", "pre-candidate", "candidate", "leader"}[r]
}

// SoftState is volatile state the driver reports (INFO raft) but need not persist.
type SoftState struct {
	Lead uint64
	Role Role
}

// ReadState answers a ReadIndex request: once the state machine has applied Index, a
// read that arrived before the request may be served. Lost means the request cannot be
// answered here (leadership lost or moved); the driver fails it.
type ReadState struct {
	Ctx   uint64
	Index uint64
	Lost  bool
}

// Ready is the core's output since the last Advance. The driver handles it in this order:
//
//  1. persist Snapshot (if any), then Entries and HardState (fsync per policy) — Entries
//     that start at or before the WAL's last index replace everything from there on;
//  2. send Messages: they may depend on step 1 (a vote, an acknowledgement of entries);
//  3. apply CommittedEntries in order, and answer ReadStates once their Index is applied;
//  4. call Advance(rd).
type Ready struct {
	SoftState        *SoftState // non-nil when role or leader changed
	HardState        HardState
	HardStateChanged bool
	Snapshot         *SnapshotMeta
	Entries          []Entry
	CommittedEntries []Entry
	Messages         []Message
	ReadStates       []ReadState
}

// MustSync reports whether step 1 of Ready has anything to write.
func (rd *Ready) MustSync() bool {
	return rd.HardStateChanged || len(rd.Entries) > 0 || rd.Snapshot != nil
}

var (
	// ErrNotLeader rejects a proposal, read or transfer on a node that does not lead.
	ErrNotLeader = errors.New("raft: not leader")
	// ErrTransferring rejects proposals while leadership is being handed over.
	ErrTransferring = errors.New("raft: leadership transfer in progress")
	// ErrConfPending rejects a membership change while another is not yet committed, or
	// before the leader has committed an entry of its own term.
	ErrConfPending = errors.New("raft: a membership change is already in progress")
	// ErrBadConfChange rejects a change that makes no sense for the current membership.
	ErrBadConfChange = errors.New("raft: invalid membership change")
)
