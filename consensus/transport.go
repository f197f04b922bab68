package consensus

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nanokv/nanokv/consensus/raft"
	"github.com/nanokv/nanokv/internal/netserve"
)

// The member-to-member transport: TCP, one pipelined connection per peer and direction,
// length-prefixed frames. A connection opens with a hello naming the cluster and the
// sender; a member of another cluster (or a stray client) is refused before any message
// is read.
//
//	hello := magic "NKVR" version:u8 clusterID:u64 from:u64 metaLen:u16 meta advLen:u16 advertise
//	frame := len:u32 kind:u8 body             (len counts kind and body)
//	  kind 0: a message (raft.AppendMessage)
//	  kind 1: a snapshot chunk: index:u64 last:u8 data
//
// Snapshots travel on a connection of their own (SendSnapshot), so that a large transfer
// never queues heartbeats behind it: its chunks, then the MsgSnap that announces it. The
// receiver writes the chunks to <SnapshotDir>/snap-<index>.recv and delivers the MsgSnap
// only once the file is complete.
//
// advertise is the sender's own member address: a member that hears from a peer it has
// no address for (a new member hears from the leader before it knows the membership)
// answers there. meta is the sender's own description (the node puts its client addresses there, so a
// follower can redirect clients to the leader it hears from).

const (
	transportMagic   = "NKVR"
	transportVersion = 2
	frameMsg         = 0
	frameSnapChunk   = 1
	snapChunkSize    = 1 << 20
	helloSize        = 4 + 1 + 8 + 8 + 2
	maxMeta          = 4096
	// maxFrame bounds one message: MsgApp batches are capped well below this by the
	// core's MaxMsgBytes, but one entry may carry a client batch up to the bulk limits.
	maxFrame = 1<<30 + 1<<20
	// peerQueue is how many messages wait for one peer before new ones are dropped:
	// Raft retransmits, and a dead peer must not grow the heap.
	peerQueue = 4096
)

// ErrWrongCluster rejects a connection from a member of another cluster.
var ErrWrongCluster = errors.New("consensus: connection from another cluster")

// TCPTransport sends messages to peers and hands the ones it receives to Deliver.
type TCPTransport struct {
	id        uint64
	clusterID uint64
	meta      string
	advertise string
	snapDir   string
	deliver   func(raft.Message)
	peerDown  func(id uint64)
	logf      func(format string, args ...any)
	ln        net.Listener

	mu    sync.Mutex
	peers map[uint64]*peer
	conns map[net.Conn]struct{}
	metas map[uint64]string // what each peer said of itself in its hello

	stop chan struct{}
	wg   sync.WaitGroup

	probesDone atomic.Int64 // probes that have finished, whatever they found
}

type peer struct {
	id   uint64
	addr string
	q    chan raft.Message
	stop chan struct{}
	// kick makes the writer drop its connection and dial again: the peer's own
	// connection to us broke, so it may have restarted, and a connection to the process
	// that was there would swallow the next message before it fails.
	kick chan struct{}
	// lazy holds the peer's AppendEntries back for lazyDelay, so that it gets them in
	// fewer, larger writes (see SetLazy).
	lazy atomic.Bool
}

// TransportConfig configures a TCPTransport.
type TransportConfig struct {
	ID        uint64
	ClusterID uint64
	Listen    string       // host:port; port 0 picks one (see Addr)
	Listener  net.Listener // if set, used instead of Listen
	Meta      string       // sent to every peer in the hello (at most 4096 bytes)
	// SnapshotDir is where received snapshots are written; "" refuses them.
	SnapshotDir string
	// Advertise is the address other members reach this one on; default the listener\'s.
	Advertise string
	Deliver   func(raft.Message)
	// PeerDown, if set, hears of a peer whose process is gone: its connection to us
	// broke, and its member port then refused a connection (see probe).
	PeerDown func(id uint64)
	Logf     func(format string, args ...any)
}

// ListenTransport starts listening. Add peers with SetPeer.
func ListenTransport(cfg TransportConfig) (*TCPTransport, error) {
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	ln := cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", cfg.Listen); err != nil {
			return nil, fmt.Errorf("consensus: transport: %w", err)
		}
	}
	if len(cfg.Meta) > maxMeta {
		ln.Close()
		return nil, fmt.Errorf("consensus: transport meta of %d bytes", len(cfg.Meta))
	}
	if cfg.Advertise == "" {
		cfg.Advertise = ln.Addr().String()
	}
	t := &TCPTransport{id: cfg.ID, clusterID: cfg.ClusterID, meta: cfg.Meta, advertise: cfg.Advertise, snapDir: cfg.SnapshotDir, deliver: cfg.Deliver, peerDown: cfg.PeerDown, logf: cfg.Logf, ln: ln,
		peers: map[uint64]*peer{}, conns: map[net.Conn]struct{}{}, metas: map[uint64]string{}, stop: make(chan struct{})}
	t.wg.Add(1)
	go t.accept()
	return t, nil
}

// Addr is the address the transport listens on.
func (t *TCPTransport) Addr() string { return t.ln.Addr().String() }

// PeerMeta is what peer id said of itself when it last connected ("" if it has not).
func (t *TCPTransport) PeerMeta(id uint64) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.metas[id]
}

// SetPeer adds a peer or changes its address.
func (t *TCPTransport) SetPeer(id uint64, addr string) {
	if id == t.id {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped() {
		return // closed: a hello read meanwhile must not start a writer Close cannot stop
	}
	if p := t.peers[id]; p != nil {
		if p.addr == addr {
			return
		}
		close(p.stop)
	}
	p := &peer{id: id, addr: addr, q: make(chan raft.Message, peerQueue), stop: make(chan struct{}), kick: make(chan struct{}, 1)}
	t.peers[id] = p
	t.wg.Add(1)
	go t.runPeer(p)
}

// RemovePeer stops sending to a peer.
func (t *TCPTransport) RemovePeer(id uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.peers[id]; p != nil {
		close(p.stop)
		delete(t.peers, id)
	}
}

// lazyDelay is how long a lazy peer's AppendEntries wait to be joined by the next ones
// (a variable for tests).
var lazyDelay = time.Millisecond

// SetLazy makes a peer lazy or not. A leader needs the acknowledgements of only a quorum
// to commit; the followers beyond it (in a three-member cluster, one of the two) can get
// their entries a little later and in larger batches: each batch costs the leader a
// write and an acknowledgement to read, and the follower a wake-up, a read, a WAL write
// and an acknowledgement to send, whatever its size. A lazy peer's writer, woken by an
// AppendEntries, waits lazyDelay before it writes what has queued by then; other
// messages (votes, heartbeats alone) go at once, and so do AppendEntries to a peer that
// waits for a commit (a write it forwarded: raft.Message.Waiting).
func (t *TCPTransport) SetLazy(id uint64, lazy bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.peers[id]; p != nil {
		p.lazy.Store(lazy)
	}
}

// Send queues messages for their peers without blocking; a full queue drops.
func (t *TCPTransport) Send(msgs []raft.Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range msgs {
		p := t.peers[m.To]
		if p == nil {
			continue
		}
		select {
		case p.q <- m:
		default:
		}
	}
}

// Close stops listening, closes every connection and waits for the goroutines.
func (t *TCPTransport) Close() error {
	t.mu.Lock()
	select {
	case <-t.stop:
		t.mu.Unlock()
		return nil
	default:
	}
	close(t.stop)
	for _, p := range t.peers {
		close(p.stop)
	}
	t.peers = map[uint64]*peer{}
	for c := range t.conns {
		c.Close()
	}
	t.mu.Unlock()
	err := t.ln.Close()
	t.wg.Wait()
	return err
}

func (t *TCPTransport) stopped() bool {
	select {
	case <-t.stop:
		return true
	default:
		return false
	}
}

func (t *TCPTransport) track(c net.Conn, add bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if add {
		select {
		case <-t.stop:
			return false
		default:
		}
		t.conns[c] = struct{}{}
	} else {
		delete(t.conns, c)
	}
	return true
}

// runPeer keeps one connection to a peer and writes its queue to it, many frames per
// write. On failure it reconnects with exponential backoff (10 ms to 1 s); what was
// queued meanwhile is sent, what overflowed was dropped.
func (t *TCPTransport) runPeer(p *peer) {
	defer t.wg.Done()
	backoff := 10 * time.Millisecond
	for {
		select {
		case <-p.stop:
			return
		default:
		}
		c, err := net.DialTimeout("tcp", p.addr, time.Second)
		if err == nil {
			if !t.track(c, true) {
				c.Close()
				return
			}
			select {
			case <-p.kick: // this connection is newer than the reason for the kick
			default:
			}
			err = t.writeLoop(c, p)
			t.track(c, false)
			c.Close()
			backoff = 10 * time.Millisecond
			if errors.Is(err, errKicked) {
				continue
			}
		}
		if err != nil && !errors.Is(err, net.ErrClosed) {
			t.logf("consensus: peer %d at %s: %v", p.id, p.addr, err)
		}
		select {
		case <-p.stop:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

func (t *TCPTransport) hello() []byte {
	hello := make([]byte, 0, helloSize+len(t.meta)+2+len(t.advertise))
	hello = append(hello, transportMagic...)
	hello = append(hello, transportVersion)
	hello = binary.BigEndian.AppendUint64(hello, t.clusterID)
	hello = binary.BigEndian.AppendUint64(hello, t.id)
	hello = binary.BigEndian.AppendUint16(hello, uint16(len(t.meta)))
	hello = append(hello, t.meta...)
	hello = binary.BigEndian.AppendUint16(hello, uint16(len(t.advertise)))
	return append(hello, t.advertise...)
}

func (t *TCPTransport) writeLoop(c net.Conn, p *peer) error {
	w := bufio.NewWriterSize(c, 64<<10)
	// The hello goes out at once: a peer we have nothing to say to yet (a learner we
	// know of but do not lead) must not time out waiting for it.
	if _, err := w.Write(t.hello()); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	var buf []byte
	for {
		select {
		case <-p.stop:
			return nil
		case <-p.kick:
			return errKicked
		case m := <-p.q:
			if m.Type == raft.MsgApp && !m.Waiting && p.lazy.Load() {
				time.Sleep(lazyDelay)
			}
			buf = appendMsgFrame(buf[:0], &m)
		drain:
			for len(buf) < 1<<20 {
				select {
				case m := <-p.q:
					buf = appendMsgFrame(buf, &m)
				default:
					break drain
				}
			}
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
}

// SendSnapshot streams a snapshot to m.To on a connection of its own, then sends m (the
// MsgSnap that announces it). It returns once the peer has it all, or with the error that
// stopped the transfer.
func (t *TCPTransport) SendSnapshot(m raft.Message, data io.Reader) error {
	t.mu.Lock()
	p := t.peers[m.To]
	t.mu.Unlock()
	if p == nil || m.Snapshot == nil {
		return fmt.Errorf("consensus: no peer %d to send a snapshot to", m.To)
	}
	c, err := net.DialTimeout("tcp", p.addr, time.Second)
	if err != nil {
		return err
	}
	if !t.track(c, true) {
		c.Close()
		return net.ErrClosed
	}
	defer t.track(c, false)
	defer c.Close()
	w := bufio.NewWriterSize(c, 64<<10)
	if _, err := w.Write(t.hello()); err != nil {
		return err
	}
	chunk := make([]byte, snapChunkSize)
	var frame []byte
	for {
		n, rerr := io.ReadFull(data, chunk)
		if rerr != nil && rerr != io.EOF && rerr != io.ErrUnexpectedEOF {
			return rerr
		}
		last := rerr != nil
		frame = appendChunkFrame(frame[:0], m.Snapshot.Index, last, chunk[:n])
		if _, err := w.Write(frame); err != nil {
			return err
		}
		if last {
			break
		}
	}
	if _, err := w.Write(appendMsgFrame(frame[:0], &m)); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	// The peer closes the connection once it has delivered the message: wait for that,
	// so that success means it arrived.
	c.SetReadDeadline(time.Now().Add(time.Minute))
	_, err = c.Read(make([]byte, 1))
	if errors.Is(err, io.EOF) {
		return nil
	}
	return fmt.Errorf("consensus: snapshot to %d: %w", m.To, err)
}

func appendChunkFrame(dst []byte, index uint64, last bool, data []byte) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, frameSnapChunk)
	dst = binary.BigEndian.AppendUint64(dst, index)
	dst = append(dst, boolByte(last))
	dst = append(dst, data...)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func appendMsgFrame(dst []byte, m *raft.Message) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, frameMsg)
	dst = raft.AppendMessage(dst, m)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

func (t *TCPTransport) accept() {
	defer t.wg.Done()
	for {
		c, err := t.ln.Accept()
		if err != nil {
			return
		}
		if !t.track(c, true) {
			c.Close()
			return
		}
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			defer t.track(c, false)
			defer c.Close()
			from, err := t.readLoop(c)
			if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				t.logf("consensus: connection from %s: %v", c.RemoteAddr(), err)
			}
			if err != nil && from != 0 && !t.stopped() {
				t.kickPeer(from)
				if t.peerDown != nil {
					t.wg.Add(1) // while this goroutine still counts, so Close waits for it
					go t.probe(from)
				}
			}
		}()
	}
}

var errKicked = errors.New("consensus: reconnecting")

// kickPeer makes the writer to a peer dial again (see peer.kick).
func (t *TCPTransport) kickPeer(id uint64) {
	t.mu.Lock()
	p := t.peers[id]
	t.mu.Unlock()
	if p != nil {
		select {
		case p.kick <- struct{}{}:
		default:
		}
	}
}

// probeAttempts and probeGap space the dials of probe: a dying process closes its
// connections and its listener within microseconds of each other, but not in an order
// we know (a dial that catches the listener closing is reset, not refused).
const (
	probeAttempts = 3
	probeGap      = 5 * time.Millisecond
)

// probe asks whether a peer whose connection to us just broke is still running, by
// dialling its member port. A live member always listens there (a node closes its
// transport only after its Raft loop has stopped), so a refused connection proves its
// process is gone, and PeerDown hears of it. A connection or a timeout proves nothing
// (a partition refuses nothing, it drops). A firewall that rejects with a TCP reset
// between members would forge the proof; nanokv assumes none does.
//
// The probe sends no hello, so the peer's side of it ends before it knows who dialled,
// and it probes nothing back.
func (t *TCPTransport) probe(id uint64) {
	defer t.wg.Done()
	defer t.probesDone.Add(1)
	t.mu.Lock()
	p := t.peers[id]
	t.mu.Unlock()
	if p == nil {
		return
	}
	for i := range probeAttempts {
		if i > 0 {
			select {
			case <-t.stop:
				return
			case <-time.After(probeGap):
			}
		}
		c, err := net.DialTimeout("tcp", p.addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
			continue
		}
		if errors.Is(err, syscall.ECONNRESET) {
			continue // the listener closed while our connection waited in its queue: ask again
		}
		if errors.Is(err, syscall.ECONNREFUSED) && !t.stopped() {
			t.peerDown(id)
		}
		return
	}
}

// readLoop reads one connection's hello and frames. from is the member that said hello
// (0 until it has); err is nil only when the connection ended as planned (a snapshot
// delivered).
func (t *TCPTransport) readLoop(c net.Conn) (from uint64, err error) {
	r := bufio.NewReaderSize(c, 64<<10)
	var hello [helloSize]byte
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(r, hello[:]); err != nil {
		return 0, err
	}
	if string(hello[:4]) != transportMagic || hello[4] != transportVersion {
		return 0, fmt.Errorf("consensus: not a nanokv member (bad hello)")
	}
	if cid := binary.BigEndian.Uint64(hello[5:]); cid != t.clusterID {
		return 0, fmt.Errorf("%w: cluster %016x, we are %016x", ErrWrongCluster, cid, t.clusterID)
	}
	sender := binary.BigEndian.Uint64(hello[13:])
	meta := make([]byte, binary.BigEndian.Uint16(hello[21:]))
	if len(meta) > maxMeta {
		return 0, fmt.Errorf("consensus: member %d: meta of %d bytes", sender, len(meta))
	}
	if _, err := io.ReadFull(r, meta); err != nil {
		return 0, err
	}
	var advLen [2]byte
	if _, err := io.ReadFull(r, advLen[:]); err != nil {
		return 0, err
	}
	adv := make([]byte, binary.BigEndian.Uint16(advLen[:]))
	if len(adv) > maxMeta {
		return 0, fmt.Errorf("consensus: member %d: address of %d bytes", sender, len(adv))
	}
	if _, err := io.ReadFull(r, adv); err != nil {
		return 0, err
	}
	c.SetReadDeadline(time.Time{})
	t.mu.Lock()
	t.metas[sender] = string(meta)
	_, known := t.peers[sender]
	t.mu.Unlock()
	if !known && len(adv) > 0 && sender != t.id {
		t.SetPeer(sender, string(adv))
	}
	var recv snapReceiver
	defer recv.abort()
	var done bool
	fr := frameReader{handle: func(buf []byte) bool {
		done, err = t.handleFrame(sender, &recv, buf)
		return !done && err == nil
	}}
	// The hello's reader may hold the first frames already; the rest come from the
	// socket, read once per readiness (netserve.ReadLoop), as the clients' connections
	// are: a bufio.Reader over the connection reads again at once after each batch of
	// frames, and finds nothing as often as not.
	if fr.feed(readBuffered(r)) {
		netserve.ReadLoop(c, fr.space, fr.got)
	}
	switch {
	case fr.err != nil:
		return sender, fmt.Errorf("%w from member %d", fr.err, sender)
	case err != nil || done:
		return sender, err
	}
	return sender, io.EOF // the connection failed or the peer closed it
}

// readBuffered is what r holds already.
func readBuffered(r *bufio.Reader) []byte {
	b, _ := r.Peek(r.Buffered())
	return b
}

// handleFrame handles one frame from member sender: done when the connection has
// ended as planned (a snapshot delivered), an error when it must end.
func (t *TCPTransport) handleFrame(sender uint64, recv *snapReceiver, buf []byte) (done bool, err error) {
	switch buf[0] {
	case frameMsg:
		m, err := raft.ParseMessage(buf[1:])
		if err != nil {
			return false, fmt.Errorf("consensus: member %d: %w", sender, err)
		}
		if m.From != sender || m.To != t.id {
			return false, fmt.Errorf("consensus: member %d sent a message from %d to %d", sender, m.From, m.To)
		}
		if m.Type == raft.MsgSnap {
			if m.Snapshot == nil || recv.done != m.Snapshot.Index || recv.done == 0 {
				return false, fmt.Errorf("consensus: member %d announced a snapshot it did not send", sender)
			}
			t.deliver(m)
			return true, nil // closing tells the sender it arrived
		}
		t.deliver(m)
	case frameSnapChunk:
		if len(buf) < 10 {
			return false, fmt.Errorf("consensus: short snapshot chunk from member %d", sender)
		}
		if t.snapDir == "" {
			return false, fmt.Errorf("consensus: member %d sent a snapshot; this member keeps none", sender)
		}
		index, last := binary.BigEndian.Uint64(buf[1:]), buf[9] == 1
		if err := recv.write(t.snapDir, index, last, buf[10:]); err != nil {
			return false, err
		}
	default:
		return false, fmt.Errorf("consensus: frame kind %d from member %d", buf[0], sender)
	}
	return false, nil
}

// frameReader cuts a stream into frames (a 4-byte big-endian length, then that many
// bytes) and hands each to handle in a buffer of its own: the entries of a message
// alias it and live on in the core's log. It is fed by netserve.ReadLoop: space is
// where the next read goes, got takes the bytes read. Small frames are read into a
// scratch buffer and copied out; the rest of a frame longer than the scratch is read
// into its own buffer directly.
type frameReader struct {
	handle  func(frame []byte) bool // false stops the reading
	scratch []byte
	hdr     [4]byte
	nh      int    // bytes of hdr received
	frame   []byte // the frame being received, once its length is known
	nf      int    // bytes of frame received
	direct  bool   // the last space was frame[nf:]
	err     error  // a frame length out of bounds
}

// frameScratch is the scratch buffer's size, as the bufio.Reader it replaces.
const frameScratch = 64 << 10

func (f *frameReader) space() []byte {
	if f.frame != nil && len(f.frame)-f.nf > frameScratch {
		f.direct = true
		return f.frame[f.nf:]
	}
	f.direct = false
	if f.scratch == nil {
		f.scratch = make([]byte, frameScratch)
	}
	return f.scratch
}

func (f *frameReader) got(n int) bool {
	if f.direct {
		f.nf += n
		return f.nf < len(f.frame) || f.complete()
	}
	return f.feed(f.scratch[:n])
}

// feed takes bytes of the stream; false when reading must stop.
func (f *frameReader) feed(b []byte) bool {
	for len(b) > 0 {
		if f.frame == nil {
			c := copy(f.hdr[f.nh:], b)
			f.nh += c
			b = b[c:]
			if f.nh < len(f.hdr) {
				return true
			}
			n := binary.BigEndian.Uint32(f.hdr[:])
			if n == 0 || n > maxFrame {
				f.err = fmt.Errorf("consensus: frame of %d bytes", n)
				return false
			}
			f.frame, f.nf = make([]byte, n), 0
		}
		c := copy(f.frame[f.nf:], b)
		f.nf += c
		b = b[c:]
		if f.nf == len(f.frame) && !f.complete() {
			return false
		}
	}
	return true
}

// complete hands on the frame received whole and starts the next.
func (f *frameReader) complete() bool {
	frame := f.frame
	f.frame, f.nf, f.nh = nil, 0, 0
	return f.handle(frame)
}

// snapReceiver writes one incoming snapshot to <dir>/snap-<index>.recv.
type snapReceiver struct {
	f     *os.File
	index uint64
	done  uint64 // index of the snapshot completely received
}

func receivedSnapshotPath(dir string, index uint64) string {
	return filepath.Join(dir, fmt.Sprintf("snap-%016x.recv", index))
}

func (s *snapReceiver) write(dir string, index uint64, last bool, data []byte) error {
	if s.f == nil || s.index != index {
		s.abort()
		f, err := os.Create(receivedSnapshotPath(dir, index) + ".tmp")
		if err != nil {
			return err
		}
		s.f, s.index = f, index
	}
	if _, err := s.f.Write(data); err != nil {
		return err
	}
	if !last {
		return nil
	}
	err := s.f.Sync()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	s.f = nil
	if err == nil {
		err = os.Rename(receivedSnapshotPath(dir, index)+".tmp", receivedSnapshotPath(dir, index))
	}
	if err != nil {
		return err
	}
	s.done = index
	return nil
}

func (s *snapReceiver) abort() {
	if s.f != nil {
		s.f.Close()
		os.Remove(s.f.Name())
		s.f = nil
	}
}
