package nicoffload

// batch is one sealed Append: the entries after prev, as every follower received them.
// The ring keeps the entries, not the encoded bytes: a replay is re-encoded with the
// current commit index and the follower's id.
type batch struct {
	prev, prevTerm uint64
	entries        []Entry
	bytes          int // wire size of the datagram
}

func (b *batch) last() uint64 { return b.prev + uint64(len(b.entries)) }

// ring is the leader's retransmission ring: the most recent sealed batches, bounded by
// count and by bytes, in index order. It always keeps the newest batch, whatever its size.
type ring struct {
	buf      []batch // circular; len(buf) is the capacity in batches
	head, n  int
	bytes    int
	maxBytes int
	spare    [][]Entry // entry slices of evicted batches, reused for new ones
}

func newRing(maxDatagrams, maxBytes int) ring {
	return ring{buf: make([]batch, maxDatagrams), maxBytes: maxBytes}
}

func (r *ring) at(i int) *batch { return &r.buf[(r.head+i)%len(r.buf)] }

// push adds a batch after the newest, evicting the oldest ones past either bound.
func (r *ring) push(b batch) {
	for r.n > 0 && (r.n == len(r.buf) || r.bytes+b.bytes > r.maxBytes) {
		r.popOldest()
	}
	*r.at(r.n) = b
	r.n++
	r.bytes += b.bytes
}

func (r *ring) popOldest() {
	old := r.at(0)
	r.bytes -= old.bytes
	clear(old.entries) // drop the references to the proposals' data
	if len(r.spare) < 4 {
		r.spare = append(r.spare, old.entries[:0])
	}
	*old = batch{}
	r.head = (r.head + 1) % len(r.buf)
	r.n--
}

// first is the lowest index the ring can replay (0 when empty).
func (r *ring) first() uint64 {
	if r.n == 0 {
		return 0
	}
	return r.at(0).prev + 1
}

// find returns the position of the batch holding index, and whether the ring has it.
func (r *ring) find(index uint64) (int, bool) {
	if r.n == 0 || index < r.first() || index > r.at(r.n-1).last() {
		return 0, false
	}
	lo, hi := 0, r.n-1
	for lo < hi { // the first batch whose last ≥ index
		mid := (lo + hi) / 2
		if r.at(mid).last() < index {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, true
}

// takeSpare returns an empty entry slice for the next batch, reusing an evicted one.
func (r *ring) takeSpare() []Entry {
	if n := len(r.spare); n > 0 {
		s := r.spare[n-1]
		r.spare = r.spare[:n-1]
		return s
	}
	return nil
}

func (r *ring) reset() {
	for r.n > 0 {
		r.popOldest()
	}
	r.head = 0
}
