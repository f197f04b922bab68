package consensus

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// The WAL is a sequence of segment files named wal-<first index, 16 hex digits>.log. Each
// holds records:
//
//	len:u32 crc:u32 payload[len]      crc = CRC-32C of payload
//	payload := index:uvarint term:uvarint time:varint data
//
// A record is written whole by one write(2) batch; after a crash the last segment may end
// in a torn record, which Open truncates (and logs). A bad record anywhere else is
// corruption and Open refuses to go on.

// maxRecordSize bounds one record: an entry may carry a batch of commands up to the
// client limits (512 MiB bulk), plus headers.
const maxRecordSize = 1<<30 + 1<<20

// segmentSize is the size past which appends go to a new segment file (a variable only
// for tests, which make many small segments).
var segmentSize int64 = 64 << 20

// presyncAhead is how far before the end of a segment a write starts an fsync of it on a
// goroutine of its own. rotate must sync the segment it ends before it starts the next
// (replay tolerates damage only at the very end of the log), and it does so in the
// writer's way: with up to a second of writes to flush (--fsync everysec), a rotation
// took 6–25 ms on a single node under redis-benchmark -P 16, and those were the run's
// worst latencies. Synced ahead, little is left for rotate to flush.
const presyncAhead = 8 << 20

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrCorruptWAL reports damage that is not a torn tail.
var ErrCorruptWAL = errors.New("consensus: corrupt WAL")

// appendRecord encodes e as one WAL record.
func appendRecord(dst []byte, e *Entry) []byte {
	return appendFrame(dst, func(dst []byte) []byte {
		dst = binary.AppendUvarint(dst, e.Index)
		dst = binary.AppendUvarint(dst, e.Term)
		dst = binary.AppendVarint(dst, e.Time)
		return append(dst, e.Data...)
	})
}

// errTorn is a record cut short by the end of the data: a crash during a write.
var errTorn = errors.New("torn record")

// parseFrame checks the record at the start of b and returns its payload (aliasing b)
// and the bytes it used.
func parseFrame(b []byte) ([]byte, int, error) {
	if len(b) < 8 {
		return nil, 0, errTorn
	}
	n := binary.LittleEndian.Uint32(b)
	sum := binary.LittleEndian.Uint32(b[4:])
	if n > maxRecordSize {
		return nil, 0, fmt.Errorf("%w: record length %d", ErrCorruptWAL, n)
	}
	if uint64(len(b)-8) < uint64(n) {
		return nil, 0, errTorn
	}
	payload := b[8 : 8+n]
	if crc32.Checksum(payload, crcTable) != sum {
		return nil, 0, fmt.Errorf("%w: checksum mismatch", ErrCorruptWAL)
	}
	return payload, int(8 + n), nil
}

// appendFrame appends a record whose payload build writes, filling in length and CRC.
func appendFrame(dst []byte, build func(dst []byte) []byte) []byte {
	start := len(dst)
	dst = build(append(dst, 0, 0, 0, 0, 0, 0, 0, 0))
	payload := dst[start+8:]
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(dst[start+4:], crc32.Checksum(payload, crcTable))
	return dst
}

// parseRecord decodes the single-member entry record at the start of b, returning the
// bytes it used. Data aliases b.
func parseRecord(b []byte) (Entry, int, error) {
	payload, n, err := parseFrame(b)
	if err != nil {
		return Entry{}, 0, err
	}
	e, err := decodeEntryPayload(payload)
	return e, n, err
}

func decodeEntryPayload(payload []byte) (Entry, error) {
	var e Entry
	var k int
	if e.Index, k = binary.Uvarint(payload); k <= 0 {
		return Entry{}, fmt.Errorf("%w: bad index", ErrCorruptWAL)
	}
	payload = payload[k:]
	if e.Term, k = binary.Uvarint(payload); k <= 0 {
		return Entry{}, fmt.Errorf("%w: bad term", ErrCorruptWAL)
	}
	payload = payload[k:]
	if e.Time, k = binary.Varint(payload); k <= 0 {
		return Entry{}, fmt.Errorf("%w: bad time", ErrCorruptWAL)
	}
	e.Data = payload[k:]
	return e, nil
}

// wal owns the segment files of one node.
type wal struct {
	dir    string
	prefix string   // segment files are <prefix>-<seq, 16 hex digits>.log
	f      *os.File // current segment, opened for append
	// cur is f for syncBehind, which runs on another goroutine than the writer.
	cur atomic.Pointer[os.File]
	seq uint64 // the current segment's number
	// presynced: the current segment's early fsync (presyncAhead) has started; presyncs
	// are those still running, which close waits for.
	presynced bool
	presyncs  sync.WaitGroup
	// indexNamed segments are numbered by their first entry's index (the single-member
	// WAL, whose indexes only grow); otherwise by sequence.
	indexNamed bool
	size       int64 // bytes in the current segment
	logf       func(format string, args ...any)
}

func segmentName(prefix string, seq uint64) string { return fmt.Sprintf("%s-%016x.log", prefix, seq) }

func listSegments(dir string) ([]string, error) { return listPrefixed(dir, "wal") }

func listPrefixed(dir, prefix string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix+"-") && strings.HasSuffix(e.Name(), ".log") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names) // fixed-width hex: lexical order is numeric order
	return names, nil
}

// openWAL opens the single-member WAL: segments named by their first index, entries in
// strict index order. Entries at or below after, which a snapshot holds, are skipped; the
// first one after it must be there.
func openWAL(dir string, after uint64, logf func(string, ...any), fn func(Entry) error) (*wal, error) {
	var prev uint64
	w, err := openSegments(dir, "wal", logf, func(_ uint64, _ int64, payload []byte) error {
		e, err := decodeEntryPayload(payload)
		if err != nil {
			return err
		}
		if prev != 0 && e.Index != prev+1 {
			return fmt.Errorf("%w: index %d follows %d", ErrCorruptWAL, e.Index, prev)
		}
		if prev == 0 && e.Index > after+1 {
			return fmt.Errorf("wal: the log starts at index %d, after a gap from the snapshot at %d", e.Index, after)
		}
		prev = e.Index
		if e.Index <= after {
			return nil
		}
		return fn(e)
	})
	if err != nil {
		return nil, err
	}
	w.indexNamed = true
	if w.f == nil {
		if err := w.rotate(max(prev, after) + 1); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// openSegments reads every <prefix> segment in dir in order, calling fn with each
// record's payload and the offset of its frame in the segment, truncates a torn tail,
// and leaves the last segment open for appends (w.f is nil when there was none). An
// error from fn that is ErrCorruptWAL is treated like a damaged record; any other error
// stops the open.
func openSegments(dir, prefix string, logf func(string, ...any), fn func(seq uint64, off int64, payload []byte) error) (*wal, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	names, err := listPrefixed(dir, prefix)
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	w := &wal{dir: dir, prefix: prefix, logf: logf}
	for i, name := range names {
		path := filepath.Join(dir, name)
		var seq uint64
		fmt.Sscanf(strings.TrimPrefix(name, prefix+"-"), "%x", &seq)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("wal: %w", err)
		}
		off := 0
		for off < len(b) {
			payload, n, err := parseFrame(b[off:])
			if err == nil {
				if err = fn(seq, int64(off), payload); err != nil && !errors.Is(err, ErrCorruptWAL) {
					return nil, err
				}
			}
			if err != nil {
				// Only the end of the last segment may be damaged by a crash: a record cut
				// short, zeros the file system allocated, or a last record whose bytes did
				// not all reach the disk. Anything else is corruption.
				rest := b[off:]
				torn := errors.Is(err, errTorn) || isZeroTail(rest) || tailIsLastRecord(rest)
				if i != len(names)-1 || !torn {
					return nil, fmt.Errorf("wal: %s offset %d: %w", name, off, err)
				}
				break
			}
			off += n
		}
		if off < len(b) {
			logf("wal: %s: truncating %d bytes of torn tail at offset %d", name, len(b)-off, off)
			if err := os.Truncate(path, int64(off)); err != nil {
				return nil, fmt.Errorf("wal: truncate: %w", err)
			}
		}
		if i == len(names)-1 {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				return nil, fmt.Errorf("wal: %w", err)
			}
			w.f, w.size, w.seq = f, int64(off), seq
			w.cur.Store(f)
		}
	}
	return w, nil
}

// isZeroTail reports whether b is all zero bytes: space the file system allocated for a
// write that never reached the disk.
func isZeroTail(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// tailIsLastRecord reports whether the damaged record at the start of b is the last thing
// in the segment: its declared length reaches exactly to the end (or beyond).
func tailIsLastRecord(b []byte) bool {
	if len(b) < 8 {
		return true
	}
	n := binary.LittleEndian.Uint32(b)
	return uint64(len(b)) <= uint64(n)+8
}

// rotate starts a new segment numbered seq.
func (w *wal) rotate(seq uint64) error {
	if w.f != nil {
		if err := w.f.Sync(); err != nil {
			return fmt.Errorf("wal: sync: %w", err)
		}
		if err := w.f.Close(); err != nil {
			return fmt.Errorf("wal: close: %w", err)
		}
	}
	f, err := os.OpenFile(filepath.Join(w.dir, segmentName(w.prefix, seq)), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	w.f, w.size, w.seq, w.presynced = f, 0, seq, false
	w.cur.Store(f)
	return syncDir(w.dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// write appends encoded records (whole records only). next is the index of the first
// entry after them, used to name a new segment. It returns the offset in segment w.seq
// at which b begins.
func (w *wal) write(b []byte, next uint64) (int64, error) {
	if w.size >= segmentSize {
		seq := w.seq + 1
		if w.indexNamed {
			seq = next - uint64(countRecords(b))
		}
		if err := w.rotate(seq); err != nil {
			return 0, err
		}
	}
	if !w.presynced && w.size+int64(len(b)) >= segmentSize-presyncAhead {
		w.presynced = true
		w.presyncs.Add(1)
		go func(f *os.File) {
			defer w.presyncs.Done()
			f.Sync() // an error shows again in rotate's own sync, which reports it
		}(w.f)
	}
	start := w.size
	for len(b) > 0 {
		n, err := w.f.Write(b)
		w.size += int64(n)
		if err != nil && !errors.Is(err, io.ErrShortWrite) {
			return start, fmt.Errorf("wal: write: %w", err)
		}
		b = b[n:]
	}
	return start, nil
}

func countRecords(b []byte) int {
	n := 0
	for len(b) >= 8 {
		b = b[8+binary.LittleEndian.Uint32(b):]
		n++
	}
	return n
}

func (w *wal) sync() error {
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("wal: sync: %w", err)
	}
	return nil
}

// syncBehind is the periodic fsync of --fsync everysec. It runs on a goroutine of its
// own while the writer goes on appending: it takes no lock, so that the writer (the
// Raft loop, or a single node's batch loop) never waits out an fsync of a second's worth
// of writes (15–28 ms for three members under redis-benchmark -P 16 on the project's
// machine, once a second on each). What the writer appends meanwhile may or may not be
// covered, as a write just after the sync would not be. A segment that rotate closes
// meanwhile was synced by rotate before it closed it.
func (w *wal) syncBehind() error {
	f := w.cur.Load()
	if f == nil {
		return nil
	}
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("wal: sync: %w", err)
	}
	return nil
}

func (w *wal) close() error {
	w.presyncs.Wait()
	if w.f == nil {
		return nil
	}
	err := w.f.Sync()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.f = nil
	w.cur.Store(nil)
	return err
}
