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

// segmentSize is the size past which appends go to a new segment file.
const segmentSize = 64 << 20

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrCorruptWAL reports damage that is not a torn tail.
var ErrCorruptWAL = errors.New("consensus: corrupt WAL")

// appendRecord encodes e as one WAL record.
func appendRecord(dst []byte, e *Entry) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	dst = binary.AppendUvarint(dst, e.Index)
	dst = binary.AppendUvarint(dst, e.Term)
	dst = binary.AppendVarint(dst, e.Time)
	dst = append(dst, e.Data...)
	payload := dst[start+8:]
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(dst[start+4:], crc32.Checksum(payload, crcTable))
	return dst
}

// errTorn is a record cut short by the end of the data: a crash during a write.
var errTorn = errors.New("torn record")

// parseRecord decodes the record at the start of b, returning the bytes it used. Data
// aliases b.
func parseRecord(b []byte) (Entry, int, error) {
	if len(b) < 8 {
		return Entry{}, 0, errTorn
	}
	n := binary.LittleEndian.Uint32(b)
	sum := binary.LittleEndian.Uint32(b[4:])
	if n > maxRecordSize {
		return Entry{}, 0, fmt.Errorf("%w: record length %d", ErrCorruptWAL, n)
	}
	if uint64(len(b)-8) < uint64(n) {
		return Entry{}, 0, errTorn
	}
	payload := b[8 : 8+n]
	if crc32.Checksum(payload, crcTable) != sum {
		return Entry{}, 0, fmt.Errorf("%w: checksum mismatch", ErrCorruptWAL)
	}
	var e Entry
	var k int
	if e.Index, k = binary.Uvarint(payload); k <= 0 {
		return Entry{}, 0, fmt.Errorf("%w: bad index", ErrCorruptWAL)
	}
	payload = payload[k:]
	if e.Term, k = binary.Uvarint(payload); k <= 0 {
		return Entry{}, 0, fmt.Errorf("%w: bad term", ErrCorruptWAL)
	}
	payload = payload[k:]
	if e.Time, k = binary.Varint(payload); k <= 0 {
		return Entry{}, 0, fmt.Errorf("%w: bad time", ErrCorruptWAL)
	}
	e.Data = payload[k:]
	return e, int(8 + n), nil
}

// wal owns the segment files of one node.
type wal struct {
	dir  string
	f    *os.File // current segment, opened for append
	size int64    // bytes in the current segment
	logf func(format string, args ...any)
}

func segmentName(first uint64) string { return fmt.Sprintf("wal-%016x.log", first) }

func listSegments(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "wal-") && strings.HasSuffix(e.Name(), ".log") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names) // fixed-width hex: lexical order is index order
	return names, nil
}

// openWAL reads every segment in dir, calling fn for each entry in order, truncates a torn
// tail, and leaves the WAL open for appends.
func openWAL(dir string, logf func(string, ...any), fn func(Entry) error) (*wal, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	names, err := listSegments(dir)
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	w := &wal{dir: dir, logf: logf}
	var prev uint64
	for i, name := range names {
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("wal: %w", err)
		}
		off := 0
		for off < len(b) {
			e, n, err := parseRecord(b[off:])
			if err == nil && prev != 0 && e.Index != prev+1 {
				err = fmt.Errorf("%w: index %d follows %d", ErrCorruptWAL, e.Index, prev)
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
			if err := fn(e); err != nil {
				return nil, err
			}
			prev = e.Index
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
			w.f, w.size = f, int64(off)
		}
	}
	if w.f == nil {
		if err := w.rotate(prev + 1); err != nil {
			return nil, err
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

// rotate starts a new segment whose first entry will be first.
func (w *wal) rotate(first uint64) error {
	if w.f != nil {
		if err := w.f.Sync(); err != nil {
			return fmt.Errorf("wal: sync: %w", err)
		}
		if err := w.f.Close(); err != nil {
			return fmt.Errorf("wal: close: %w", err)
		}
	}
	f, err := os.OpenFile(filepath.Join(w.dir, segmentName(first)), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	w.f, w.size = f, 0
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
// entry after them, used to name a new segment.
func (w *wal) write(b []byte, next uint64) error {
	if w.size >= segmentSize {
		if err := w.rotate(next - uint64(countRecords(b))); err != nil {
			return err
		}
	}
	for len(b) > 0 {
		n, err := w.f.Write(b)
		w.size += int64(n)
		if err != nil && !errors.Is(err, io.ErrShortWrite) {
			return fmt.Errorf("wal: write: %w", err)
		}
		b = b[n:]
	}
	return nil
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

func (w *wal) close() error {
	if w.f == nil {
		return nil
	}
	err := w.f.Sync()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.f = nil
	return err
}
