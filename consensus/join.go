package consensus

// Joining blind proposals (RaftConfig.JoinBlind). Under many clients each writing one
// command at a time (redis-benchmark -P 1), one iteration of a leader's loop proposes a
// batch of small entries, one per client, and every member pays for each entry apart:
// its header in the datagram or MsgApp, a log entry, a WAL record with its checksum, a
// place in the apply queue and a call of the state machine. The proposals whose clients
// are answered at commit (blind writes: no local value, nothing for the applier to hand
// back) need no entry of their own, so the leader joins a run of them into one entry,
// their data concatenated, which the state machine applies as the entries one after
// the other. A proposal with a local value keeps its own entry, and the order of the
// batch is kept. A follower joins what it forwards (ProposeForward) the same way: the
// leader gets one forwarded entry for the run, tagged once, and the follower answers
// each of its proposers when that entry commits.

// maxJoinedBytes bounds a joined entry: far below what one datagram of the offload
// engine carries (nicoffload.MaxEntryData), so that joining never sends an accelerated
// term's writes through software, and small next to a MsgApp's batch.
const maxJoinedBytes = 8 << 10

// join returns batch with each run of two or more consecutive blind proposals, up to
// maxJoinedBytes of data together, replaced by one proposal that stands for them. The
// result is valid until the next call.
func (n *RaftNode) join(batch []*proposal) []*proposal {
	clear(n.joinBuf) // the last batch's: let its proposals go
	out := n.joinBuf[:0]
	for i := 0; i < len(batch); {
		j, size := i, 0
		for j < len(batch) && batch[j].local == nil && size+len(batch[j].data) <= maxJoinedBytes {
			size += len(batch[j].data)
			j++
		}
		if j-i < 2 {
			out = append(out, batch[i])
			i++
			continue
		}
		data := make([]byte, 0, size)
		for _, p := range batch[i:j] {
			data = append(data, p.data...)
		}
		out = append(out, &proposal{data: data, joined: append([]*proposal(nil), batch[i:j]...)})
		i = j
	}
	n.joinBuf = out
	return out
}
