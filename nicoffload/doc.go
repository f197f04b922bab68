// Package nicoffload is nanokv's offload engine: a software model of a SmartNIC consensus
// engine after Waverunner (Alimadadi et al., NSDI 2023). It runs the common case of
// replication — a leader appending, batching, sending, counting acks and committing; a
// follower checking, appending and acking — inside an accelerated term that software
// Raft opened for it, and hands everything else back.
//
// # What it owns and what it must not do
//
// The engine owns the data path of one accelerated term: assigning indexes to
// proposals, batching them into datagrams (many entries per datagram, sealed by size or
// after a short delay, as the paper's MCDMA batching), the retransmission ring, ack
// counting and the commit index, and on a follower the append check and the acks. It
// decides nothing software did not open a term for: it never changes term, never votes
// in an election, never truncates a log, never talks to learners, never installs a
// snapshot. On anything it does not expect — a later term, a log that does not match, a
// refused vote — it stops (Output.Halt) and software Raft resolves the case in a new
// term, then may open another accelerated term. A follower the engine cannot catch up
// from its ring is named in Output.Recover and caught up by software; Resume then asks
// it to rejoin the running term with a vote request of its own, which it grants when
// its log ends in entries of the leader's term. Entries the engine delivers to the host
// (Output.Append) are part of the one Raft log; stopping never loses them.
//
// The Engine is a pure state machine like the Raft core: no goroutines, no clock, no
// I/O. The host steps it with datagrams, time, proposals and durability, and carries out
// Output (send, append, commit). UDPTransport is the I/O half: one UDP socket read on a
// dedicated OS thread with batched syscalls.
//
// # The register hand-off
//
// Waverunner's host programs the FPGA's protocol registers when it enables acceleration
// and reads them back when it disables it. Here Open takes Registers (id, role, current
// term, last log index and term, commit index, voters, match indexes) read from software
// Raft, and Close returns them advanced by what the engine did. While the engine is
// open the host writes its log only from Output.Append.
//
// # Mapping to Waverunner's FPGA design
//
//	FPGA                              here
//	protocol registers (CSRs)         Registers, Open/Close
//	RequestVoteFPGA                   VoteRequest/VoteResponse on Open, and on Resume
//	log ring in host memory (DMA)     Output.Append, one Raft log
//	MCDMA batching                    open batch sealed at BatchBytes or BatchDelay
//	leader/follower handlers          Engine.Step (handleAppend, handleAck, ...)
//	retransmission on loss            ring + RetransmitRequest + Tick timeout
//	interrupt to software on events   Output.Halt, Output.Recover
//	network stack on the NIC          UDPTransport (recvmmsg/sendmmsg, one thread)
//
// The handlers are derived from Raft's AppendEntries receiver (Ongaro & Ousterhout, §5.3,
// Figure 2) restricted to the common case, not copied from the paper's Figure 4, whose
// text was not available to us; they keep its shape (a term check, a prevLogIndex/
// prevLogTerm check, append and ack, anything else to software):
//
//   - term < currentTerm: not ours; a Nack tells the sender our term (it halts).
//   - term > currentTerm: Halt; software adopts the term.
//   - prevLogIndex == lastLogIndex and prevLogTerm == lastLogTerm: append all, ack.
//   - prevLogIndex > lastLogIndex: a gap (loss or reordering): one retransmission
//     request per gap, repeated only after RetransmitTimeout. The datagram is dropped.
//   - prevLogIndex < lastLogIndex: a duplicate or a replay overlapping our tail. With h
//     the last index both cover, equal terms at h mean equal logs up to h (Log Matching):
//     the entries past our last are appended and we re-ack; different terms are a
//     conflict: Halt (software truncates). Entries from before Open, whose terms the
//     engine does not know, make the datagram stale: it is ignored.
//   - commitIndex = max(commitIndex, min(leaderCommit, index of the last entry
//     checked)), only after a successful check.
//
// The leader commits the highest index a majority of voters hold, and only an entry of
// the current term by counting (§5.4.2): every entry the engine proposes is of the
// current term, but entries below lastLogIndex at Open may be of earlier terms and
// commit only with a later one.
package nicoffload
