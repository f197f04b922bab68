package consensus

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/nanokv/nanokv/consensus/raft"
)

// raftStorage persists a member's Raft state: its log entries, its hard state (term,
// vote, commit) and the marks of snapshots taken, as records in segments named
// raft-<sequence>.log, sharing the single-member WAL's framing (length, CRC-32C) and its
// torn-tail rules. Records are only appended: an entry whose index is at or below the last
// one replaces the tail from there (a follower's conflicting suffix), and replay applies
// the same rule.
//
//	payload := 0x00 kind:u8 body       (0x00 never starts a single-member record)
//	entry     = raft.AppendEntry (the same bytes as inside a MsgApp)
//	hardState = raft.AppendHardState
//	snapshot  = raft.AppendSnapshotMeta
type raftStorage struct {
	mu    sync.Mutex // the loop writes; the once-a-second syncer syncs
	w     *wal
	fsync FsyncPolicy
	buf   []byte
	// last is the highest entry index each segment holds: compaction deletes the
	// segments whose entries a snapshot covers entirely.
	last map[uint64]uint64
	// saved is the hard state the WAL holds last.
	saved raft.HardState
	// locs find entry records in the segments, for ReadEntries: each is where a run of
	// records of consecutive indexes begins, in increasing index order, and the run
	// ends where the next loc begins. A run begins at a new segment, at a write that
	// replaced the tail (which drops every loc from its first index on, so that no read
	// meets the records it replaced), and locSpacing bytes after the run's last loc,
	// which bounds what a read skips to reach its first entry.
	locs []walLoc
	// written is the index of the last entry record written, sinceLoc the bytes of
	// entry records written since the newest loc.
	written  uint64
	sinceLoc int64
}

// walLoc is where entry index's record is: at off in segment seq.
type walLoc struct {
	index, seq uint64
	off        int64
}

const locSpacing = 256 << 10

const (
	recEntry     = 1
	recHardState = 2
	recSnapshot  = 3
)

// openRaftStorage replays dir into the state a core restarts from (without the bootstrap
// membership, which the caller supplies).
//
// Replay takes two steps. Reading finds the records (and a torn tail). Applying them
// starts from the newest snapshot record. Compaction deletes only the segments a snapshot
// covers entirely, so an older segment that is kept may follow a deleted one with a gap.
// That gap lies wholly below a later snapshot, and the entries in it are skipped.
func openRaftStorage(dir string, fsync FsyncPolicy, logf func(string, ...any)) (*raftStorage, raft.State, error) {
	type record struct {
		kind  byte
		entry raft.Entry
		hs    raft.HardState
	}
	var recs []record
	var snap *raft.SnapshotMeta
	last := map[uint64]uint64{}
	s := &raftStorage{fsync: fsync, last: last}
	w, err := openSegments(dir, "raft", logf, func(seq uint64, off int64, p []byte) error {
		if len(p) < 2 || p[0] != 0 {
			return fmt.Errorf("%w: not a raft record", ErrCorruptWAL)
		}
		body := p[2:]
		switch p[1] {
		case recEntry:
			e, n, err := raft.ParseEntry(body)
			if err != nil || n != len(body) {
				return fmt.Errorf("%w: entry record", ErrCorruptWAL)
			}
			if e.Index == 0 {
				return fmt.Errorf("%w: entry index 0", ErrCorruptWAL)
			}
			last[seq] = max(last[seq], e.Index)
			s.noteEntries(e.Index, e.Index, seq, off, int64(8+len(p)))
			recs = append(recs, record{kind: recEntry, entry: e})
		case recHardState:
			hs, n, err := raft.ParseHardState(body)
			if err != nil || n != len(body) {
				return fmt.Errorf("%w: hard state record", ErrCorruptWAL)
			}
			recs = append(recs, record{kind: recHardState, hs: hs})
		case recSnapshot:
			meta, _, err := raft.ParseSnapshotMeta(p[2:])
			if err != nil {
				return fmt.Errorf("%w: snapshot record: %v", ErrCorruptWAL, err)
			}
			if snap == nil || meta.Index >= snap.Index {
				snap = &meta
			}
		default:
			return fmt.Errorf("%w: record kind %d", ErrCorruptWAL, p[1])
		}
		return nil
	})
	if err != nil {
		return nil, raft.State{}, err
	}
	st := raft.State{Snapshot: snap}
	for _, rec := range recs {
		switch rec.kind {
		case recHardState:
			st.HardState = rec.hs
		case recEntry:
			if err := replayEntry(&st, rec.entry); err != nil {
				w.close()
				return nil, raft.State{}, fmt.Errorf("wal: %s: %w", dir, err)
			}
		}
	}
	if w.f == nil {
		if err := w.rotate(1); err != nil {
			return nil, raft.State{}, err
		}
	}
	// Entry data aliases the segment bytes read at open, which stay alive while any of
	// it does: StartRaft copies out the newest entries' data, which the log keeps
	// longest (detachNewest).
	if last := lastIndex(&st); st.HardState.Commit > last {
		// A commit index is only persisted with (or after) the entries it covers.
		w.close()
		return nil, raft.State{}, fmt.Errorf("%w: commit %d beyond last entry %d", ErrCorruptWAL, st.HardState.Commit, last)
	}
	s.w, s.saved = w, st.HardState
	return s, st, nil
}

func lastIndex(st *raft.State) uint64 {
	if n := len(st.Entries); n > 0 {
		return st.Entries[n-1].Index
	}
	if st.Snapshot != nil {
		return st.Snapshot.Index
	}
	return 0
}

func replayEntry(st *raft.State, e raft.Entry) error {
	next := lastIndex(st) + 1
	switch {
	case e.Index == 0:
		return fmt.Errorf("%w: entry index 0", ErrCorruptWAL)
	case st.Snapshot != nil && e.Index <= st.Snapshot.Index:
		return nil // folded into the snapshot
	case e.Index > next:
		return fmt.Errorf("%w: entry %d after %d", ErrCorruptWAL, e.Index, next-1)
	case e.Index < next:
		// The tail from e.Index on was replaced.
		first := st.Entries[0].Index
		st.Entries = st.Entries[:e.Index-first]
	}
	st.Entries = append(st.Entries, e)
	return nil
}

// save persists what step 1 of a Ready asks for: one write, and under FsyncAlways one
// fsync, before the Ready's messages go out.
//
// A hard state that differs from the saved one only in its commit index waits for the
// next write instead of costing one of its own. The commit index is volatile state in
// Raft (§5): a restarted member learns it from the leader, and a leader commits all of
// its log with the first entry of its term; what must be durable before a message goes
// out is a term, a vote and entries. A leader wrote one such record, 15 bytes, after
// most of its batches (every ack that advanced commit with nothing new to append), and
// under --fsync always synced it.
func (s *raftStorage) save(rd *raft.Ready) error {
	hs := rd.HardState
	if hs == (raft.HardState{}) {
		hs = s.saved // a Ready that carries no hard state keeps the saved one
	}
	if len(rd.Entries) == 0 && rd.Snapshot == nil && hs.Term == s.saved.Term && hs.Vote == s.saved.Vote {
		return nil
	}
	b, entOff := s.encode(rd)
	s.mu.Lock()
	defer s.mu.Unlock()
	start, err := s.w.write(b, 0)
	if err != nil {
		return err
	}
	s.saved = hs
	if n := len(rd.Entries); n > 0 {
		s.last[s.w.seq] = max(s.last[s.w.seq], rd.Entries[n-1].Index)
		s.noteEntries(rd.Entries[0].Index, rd.Entries[n-1].Index, s.w.seq, start+int64(entOff), int64(len(b)-entOff))
	}
	if s.fsync == FsyncAlways {
		return s.w.sync()
	}
	return nil
}

// encode appends the records of step 1 of rd to the storage's buffer and returns it, with
// the offset of the first entry record in it.
func (s *raftStorage) encode(rd *raft.Ready) ([]byte, int) {
	b := s.buf[:0]
	if rd.Snapshot != nil {
		b = appendFrame(b, func(dst []byte) []byte {
			return raft.AppendSnapshotMeta(append(dst, 0, recSnapshot), rd.Snapshot)
		})
	}
	entOff := len(b)
	for i := range rd.Entries {
		e := &rd.Entries[i]
		b = appendFrame(b, func(dst []byte) []byte { return raft.AppendEntry(append(dst, 0, recEntry), e) })
	}
	if hs := rd.HardState; hs != (raft.HardState{}) && (rd.HardStateChanged || hs != s.saved) {
		b = appendFrame(b, func(dst []byte) []byte { return raft.AppendHardState(append(dst, 0, recHardState), hs) })
	}
	s.buf = b
	return b, entOff
}

// noteEntries records that the entry records first..last, size bytes, were written at
// off in segment seq (locs).
func (s *raftStorage) noteEntries(first, last, seq uint64, off, size int64) {
	if first <= s.written {
		s.locs = s.locs[:sort.Search(len(s.locs), func(i int) bool { return s.locs[i].index >= first })]
	}
	if n := len(s.locs); n == 0 || first != s.written+1 || s.locs[n-1].seq != seq || s.sinceLoc >= locSpacing {
		s.locs = append(s.locs, walLoc{index: first, seq: seq, off: off})
		s.sinceLoc = 0
	}
	s.written = last
	s.sinceLoc += size
}

// ReadEntries reads entries back from the segments for a core whose log keeps only the
// newest entries' data (raft.LogReader): from lo on, in one run (locs), at least one,
// to hi and, past the first, to maxBytes of data. Entries compaction deleted are an
// error. It runs on the loop that writes, whose writes it sees (the same file, through
// the page cache).
func (s *raftStorage) ReadEntries(lo, hi uint64, maxBytes int) ([]raft.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := sort.Search(len(s.locs), func(i int) bool { return s.locs[i].index > lo }) - 1
	if k < 0 {
		return nil, fmt.Errorf("wal: entry %d is not in the segments", lo)
	}
	loc := s.locs[k]
	if k+1 < len(s.locs) {
		hi = min(hi, s.locs[k+1].index-1)
	}
	f, err := os.Open(filepath.Join(s.w.dir, segmentName(s.w.prefix, loc.seq)))
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(io.NewSectionReader(f, loc.off, math.MaxInt64-loc.off), 64<<10)
	var ents []raft.Entry
	for size := 0; ; {
		want := lo + uint64(len(ents))
		var hdr [8]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return nil, fmt.Errorf("wal: reading entry %d from segment %d: %w", want, loc.seq, err)
		}
		n := binary.LittleEndian.Uint32(hdr[:])
		if n > maxRecordSize {
			return nil, fmt.Errorf("%w: record length %d", ErrCorruptWAL, n)
		}
		rec := make([]byte, 8+int(n))
		copy(rec, hdr[:])
		if _, err := io.ReadFull(r, rec[8:]); err != nil {
			return nil, fmt.Errorf("wal: reading entry %d from segment %d: %w", want, loc.seq, err)
		}
		p, _, err := parseFrame(rec)
		if err != nil {
			return nil, err
		}
		if len(p) < 2 || p[0] != 0 || p[1] != recEntry {
			continue // a hard state or a snapshot mark
		}
		e, _, err := raft.ParseEntry(p[2:])
		switch {
		case err != nil:
			return nil, fmt.Errorf("%w: entry record: %v", ErrCorruptWAL, err)
		case e.Index < want:
			continue
		case e.Index > want:
			return nil, fmt.Errorf("%w: entry %d where %d was expected", ErrCorruptWAL, e.Index, want)
		}
		size += len(e.Data)
		if len(ents) > 0 && size > maxBytes {
			return ents, nil
		}
		ents = append(ents, e) // its data aliases rec, which is its own
		if e.Index >= hi {
			return ents, nil
		}
	}
}

// syncBehind is FsyncEverysec's periodic fsync (wal.syncBehind): it does not take the
// lock, so the Raft loop's writes go on while it runs.
func (s *raftStorage) syncBehind() error { return s.w.syncBehind() }

func (s *raftStorage) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.close()
}
