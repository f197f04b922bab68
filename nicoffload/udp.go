package nicoffload

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
)

// UDPConfig configures a UDPTransport.
type UDPConfig struct {
	ClusterID uint64
	// Listen is the local IPv4 address, e.g. "127.0.0.1:0".
	Listen string
	// Peers maps member ids to their engine addresses; a datagram is accepted only from
	// the address of the member it names as its sender. Self may be listed (ignored).
	Peers map[uint64]string
	// SpinBudget is how long the receive thread polls without blocking before it sleeps
	// in the kernel. 0 blocks at once: on a 2-core machine shared by three members and a
	// client, a spinning thread takes a core the others need.
	SpinBudget time.Duration
	// LockThread gives the receive loop an OS thread of its own, as a NIC's receive
	// pipeline owns its queue. Off by default: the socket waits in Go's netpoller, so a
	// locked thread is parked and woken with a futex per wake-up, and on a 2-core machine
	// shared by three members and a client those wake-ups cost more than the locality
	// gains (profiles of a 3-member cluster showed a third of the followers' time in
	// futex with it on).
	LockThread bool
	// BatchSize is the number of datagrams read per recvmmsg (default 32). Each slot
	// holds a MaxDatagram buffer.
	BatchSize int
	// ReadBuffer is the socket's receive buffer (SO_RCVBUF), default DefaultReadBuffer;
	// the kernel caps it at net.core.rmem_max. A follower held up for a few milliseconds
	// (GC, a busy core) must not lose the datagrams that arrive meanwhile: under SET
	// -P 16 a leader sends about 40 MB/s, 80 KB a millisecond, and the kernel's default
	// of 208 KB overflowed (RcvbufErrors), each loss a retransmission after a timeout,
	// and a run of them a fallback to software Raft.
	ReadBuffer int
	// Handler receives each batch of accepted datagrams, on the receive thread. The
	// packets (and their entries' data) alias receive buffers valid only until it
	// returns; Engine.Step copies what it keeps.
	Handler func(pkts []Packet)

	// portable makes Linux use the receive loop of the other platforms (readBatches),
	// so that its tests run it too.
	portable bool
}

// DefaultReadBuffer is UDPConfig.ReadBuffer's default.
const DefaultReadBuffer = 4 << 20

// UDPStats are the transport's counters.
type UDPStats struct {
	RecvDatagrams, RecvBatches uint64 // accepted datagrams; recvmmsg calls that returned any
	RecvEmpty                  uint64 // recvmmsg calls that found nothing (EAGAIN; Linux)
	SentDatagrams, SendBatches uint64 // datagrams sent; sendmmsg calls
	DroppedForeign             uint64 // not ours: bad header or another cluster id
	DroppedUnknown             uint64 // from an address that is not the member it claims
	DroppedMalformed           uint64 // our header, but the datagram does not decode
	SendErrors                 uint64
	NoRoute                    uint64 // datagrams to a member without an address
}

type peerTable struct {
	byAddr map[netip.AddrPort]uint64
	byID   map[uint64]*net.UDPAddr
}

// UDPTransport carries engine datagrams over one UDP socket. One goroutine (on an OS
// thread of its own with UDPConfig.LockThread) receives with recvmmsg and hands each
// batch to the Handler; Send writes a whole Output's datagrams with sendmmsg
// (golang.org/x/net/ipv4 WriteBatch) from the caller's goroutine.
type UDPTransport struct {
	cfg   UDPConfig
	conn  *net.UDPConn
	pc    *ipv4.PacketConn
	peers atomic.Pointer[peerTable]

	sendMu sync.Mutex
	wms    []ipv4.Message
	wbufs  [][]byte

	closed atomic.Bool
	done   chan struct{}

	recvDatagrams, recvBatches, recvEmpty, sentDatagrams atomic.Uint64
	sendBatches                                          atomic.Uint64
	droppedForeign, droppedUnknown, droppedMalformed     atomic.Uint64
	sendErrors, noRoute                                  atomic.Uint64
}

// ErrTransportClosed is returned by Send after Close.
var ErrTransportClosed = errors.New("nicoffload: transport closed")

// ListenUDP opens the socket and starts the receive thread.
func ListenUDP(cfg UDPConfig) (*UDPTransport, error) {
	if cfg.Handler == nil {
		return nil, errors.New("nicoffload: UDPConfig.Handler is nil")
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 32
	}
	if cfg.ReadBuffer <= 0 {
		cfg.ReadBuffer = DefaultReadBuffer
	}
	la, err := net.ResolveUDPAddr("udp4", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("nicoffload: listen %q: %w", cfg.Listen, err)
	}
	conn, err := net.ListenUDP("udp4", la)
	if err != nil {
		return nil, fmt.Errorf("nicoffload: listen %q: %w", cfg.Listen, err)
	}
	if err := setReadBuffer(conn, cfg.ReadBuffer); err != nil {
		conn.Close()
		return nil, fmt.Errorf("nicoffload: receive buffer of %d bytes: %w", cfg.ReadBuffer, err)
	}
	t := &UDPTransport{cfg: cfg, conn: conn, pc: ipv4.NewPacketConn(conn), done: make(chan struct{})}
	if err := t.SetPeers(cfg.Peers); err != nil {
		conn.Close()
		return nil, err
	}
	go t.receive()
	return t, nil
}

// setReadBuffer asks for n bytes of receive buffer. The kernel caps SO_RCVBUF at
// net.core.rmem_max (208 KB on a stock Debian); a privileged process gets the size it
// asks for with SO_RCVBUFFORCE, anyone else what the cap allows.
func setReadBuffer(conn *net.UDPConn, n int) error {
	if err := conn.SetReadBuffer(n); err != nil {
		return err
	}
	if got, err := readBuffer(conn); err != nil || got >= n {
		return err
	}
	rc, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(func(fd uintptr) { forceReadBuffer(fd, n) })
}

// readBuffer is the socket's receive buffer as the kernel reports it (twice what was
// asked for, on Linux: it counts its own bookkeeping).
func readBuffer(conn *net.UDPConn) (int, error) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var gerr error
	if err := rc.Control(func(fd uintptr) {
		n, gerr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF)
	}); err != nil {
		return 0, err
	}
	return n, gerr
}

// readBufferSize is the receive buffer the kernel gave the socket, in bytes.
func (t *UDPTransport) readBufferSize() int {
	n, _ := readBuffer(t.conn)
	return n
}

// Addr is the bound local address.
func (t *UDPTransport) Addr() *net.UDPAddr { return t.conn.LocalAddr().(*net.UDPAddr) }

// SetPeers replaces the member address table (membership changes, tests that bind :0).
func (t *UDPTransport) SetPeers(peers map[uint64]string) error {
	tab := &peerTable{byAddr: make(map[netip.AddrPort]uint64, len(peers)),
		byID: make(map[uint64]*net.UDPAddr, len(peers))}
	for id, s := range peers {
		ua, err := net.ResolveUDPAddr("udp4", s)
		if err != nil {
			return fmt.Errorf("nicoffload: peer %d address %q: %w", id, s, err)
		}
		tab.byID[id] = ua
		tab.byAddr[normalize(ua.AddrPort())] = id
	}
	t.peers.Store(tab)
	return nil
}

func normalize(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// Stats returns the counters.
func (t *UDPTransport) Stats() UDPStats {
	return UDPStats{
		RecvDatagrams: t.recvDatagrams.Load(), RecvBatches: t.recvBatches.Load(), RecvEmpty: t.recvEmpty.Load(),
		SentDatagrams: t.sentDatagrams.Load(), SendBatches: t.sendBatches.Load(),
		DroppedForeign: t.droppedForeign.Load(), DroppedUnknown: t.droppedUnknown.Load(),
		DroppedMalformed: t.droppedMalformed.Load(), SendErrors: t.sendErrors.Load(),
		NoRoute: t.noRoute.Load(),
	}
}

// Close stops the receive thread and closes the socket.
func (t *UDPTransport) Close() error {
	if t.closed.Swap(true) {
		return nil
	}
	err := t.conn.Close()
	<-t.done
	return err
}

// Send writes the datagrams with as few sendmmsg calls as the kernel allows. Datagrams
// to a member without an address are dropped (counted in NoRoute). It may be called from
// any goroutine, including the Handler.
func (t *UDPTransport) Send(dgs []Outgoing) error {
	if t.closed.Load() {
		return ErrTransportClosed
	}
	tab := t.peers.Load()
	t.sendMu.Lock()
	defer t.sendMu.Unlock()
	if cap(t.wbufs) < len(dgs) {
		t.wbufs = make([][]byte, len(dgs))
	}
	t.wbufs = t.wbufs[:len(dgs)]
	ms := t.wms[:0]
	for i, d := range dgs {
		addr := tab.byID[d.To]
		if addr == nil {
			t.noRoute.Add(1)
			continue
		}
		t.wbufs[i] = d.Bytes
		ms = append(ms, ipv4.Message{Buffers: t.wbufs[i : i+1 : i+1], Addr: addr})
	}
	t.wms = ms
	defer func() {
		clear(t.wbufs)
		clear(t.wms)
	}()
	for len(ms) > 0 {
		n, err := t.pc.WriteBatch(ms, 0)
		if err != nil {
			t.sendErrors.Add(1)
			if t.closed.Load() {
				return ErrTransportClosed
			}
			// Skip the datagram that failed (a full socket buffer, an unreachable
			// member): UDP is lossy anyway, and the engine retransmits.
			n = max(n, 1)
		}
		t.sendBatches.Add(1)
		t.sentDatagrams.Add(uint64(n))
		ms = ms[n:]
	}
	return nil
}

// maxKeptEntries bounds the entry slice the receive loop keeps between batches (56 bytes
// an entry): a recvmmsg batch of full datagrams of tiny entries can hold 100k of them.
const maxKeptEntries = 4096

// receive runs the receive loop (receiveLoop, per platform) until Close.
func (t *UDPTransport) receive() {
	if t.cfg.LockThread {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	defer close(t.done)
	if t.cfg.portable {
		t.readBatches(newReceiver(t))
		return
	}
	t.receiveLoop(newReceiver(t))
}

// readBatches is the receive loop of platforms without Linux's own (receiveLoop in
// udp_linux.go): it reads with golang.org/x/net/ipv4's ReadBatch (recvmmsg where the
// platform has it, a datagram a call elsewhere) and hands each batch to deliver, until
// Close.
func (t *UDPTransport) readBatches(r *receiver) {
	ms := make([]ipv4.Message, len(r.rx))
	for i := range ms {
		ms[i].Buffers = [][]byte{r.rx[i].buf}
	}
	for {
		n, err := t.read(ms)
		if err != nil {
			if t.closed.Load() {
				return
			}
			continue // a transient error (say, ICMP reported on the socket)
		}
		for i := range n {
			d := &r.rx[i]
			d.n, d.truncated, d.from = ms[i].N, ms[i].Flags&syscall.MSG_TRUNC != 0, netip.AddrPort{}
			if ua, _ := ms[i].Addr.(*net.UDPAddr); ua != nil {
				d.from = ua.AddrPort()
			}
		}
		t.deliver(r, r.rx[:n])
	}
}

// read fills ms for readBatches: polling without blocking for up to SpinBudget, then
// blocking.
func (t *UDPTransport) read(ms []ipv4.Message) (int, error) {
	if t.cfg.SpinBudget > 0 {
		deadline := time.Now().Add(t.cfg.SpinBudget)
		for {
			n, err := t.pc.ReadBatch(ms, syscall.MSG_DONTWAIT)
			if n > 0 || (err != nil && !errors.Is(err, syscall.EAGAIN)) {
				return n, err
			}
			if time.Now().After(deadline) {
				break
			}
		}
	}
	return t.pc.ReadBatch(ms, 0)
}

func newReceiver(t *UDPTransport) *receiver {
	r := &receiver{rx: make([]rxDatagram, t.cfg.BatchSize), pkts: make([]Packet, 0, t.cfg.BatchSize)}
	for i := range r.rx {
		r.rx[i].buf = make([]byte, MaxDatagram)
	}
	return r
}

// rxDatagram is one received datagram: a slot of the receive batch.
type rxDatagram struct {
	buf       []byte // MaxDatagram bytes, reused
	n         int    // bytes received
	truncated bool   // longer than buf: the kernel cut it
	from      netip.AddrPort
}

// receiver holds what the receive loop reuses from batch to batch.
type receiver struct {
	rx   []rxDatagram
	pkts []Packet
	ents []Entry // every entry of a batch of datagrams; reused, as the buffers are
}

// deliver checks the datagrams of one receive batch and hands those accepted to the
// Handler.
func (t *UDPTransport) deliver(r *receiver, rx []rxDatagram) {
	if len(rx) == 0 {
		return
	}
	t.recvBatches.Add(1)
	tab := t.peers.Load()
	r.pkts, r.ents = r.pkts[:0], r.ents[:0]
	for i := range rx {
		p, grown, ok := t.accept(tab, &rx[i], r.ents)
		r.ents = grown
		if ok {
			r.pkts = append(r.pkts, p)
		}
	}
	if len(r.pkts) > 0 {
		t.recvDatagrams.Add(uint64(len(r.pkts)))
		t.cfg.Handler(r.pkts)
		clear(r.pkts) // drop references into the buffers
		clear(r.ents)
	}
	if cap(r.ents) > maxKeptEntries {
		r.ents = nil // a burst of tiny entries: do not hold its slice for good
	}
}

// accept checks one received datagram: our header and cluster id first (cheap, before
// decoding entries), then that it comes from the address of the member it names. The
// packet's entries are appended to ents, which is returned grown.
func (t *UDPTransport) accept(tab *peerTable, d *rxDatagram, ents []Entry) (Packet, []Entry, bool) {
	b := d.buf[:d.n]
	cid, from, ok := PeekHeader(b)
	if !ok || cid != t.cfg.ClusterID || d.truncated {
		t.droppedForeign.Add(1)
		return Packet{}, ents, false
	}
	if id, known := tab.byAddr[normalize(d.from)]; !known || id != from {
		t.droppedUnknown.Add(1)
		return Packet{}, ents, false
	}
	p, ents, err := parsePacket(b, ents)
	if err != nil {
		t.droppedMalformed.Add(1)
		return Packet{}, ents, false
	}
	return p, ents, true
}
