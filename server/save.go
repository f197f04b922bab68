package server

import (
	"context"
	"errors"
	"time"

	"github.com/nanokv/nanokv/consensus"
	"github.com/nanokv/nanokv/resp"
)

// SAVE, BGSAVE, BGREWRITEAOF and LASTSAVE (resp.Saver). A snapshot is nanokv's RDB and
// its AOF rewrite at once: the state written at an index, and the WAL before it dropped.
// A single node writes it through its pipeline (consensus/nodesnap.go); a cluster member
// snapshots and compacts its Raft log, as RAFT.DEBUG COMPACT does.

// Errors in Redis's words, where Redis has them.
var (
	errSaveRunning = redisError("ERR Background save already in progress")
	errNoSnapshots = redisError("ERR this node keeps no snapshots: it runs without a data directory")
)

var _ resp.Saver = (*Server)(nil)

// Save implements resp.Saver.
func (s *Server) Save(background bool) error {
	if c := s.cl(); c != nil {
		if s.cfg.MemoryOnly {
			return errNoSnapshots
		}
		if c.raft.SnapshotWriting() {
			return errSaveRunning
		}
		if !background {
			return c.raft.Compact(context.Background())
		}
		go func() {
			if err := c.raft.Compact(context.Background()); err != nil {
				s.logf("server: BGSAVE: %v", err)
			}
		}()
		return nil
	}
	if s.node == nil {
		return errNoCluster
	}
	switch err := s.node.Snapshot(!background); {
	case errors.Is(err, consensus.ErrSnapshotRunning):
		return errSaveRunning
	case errors.Is(err, consensus.ErrNoSnapshots):
		return errNoSnapshots
	default:
		return err
	}
}

// LastSave implements resp.Saver: when the last snapshot was written (unix s), or when
// the node started if none was since.
func (s *Server) LastSave() int64 {
	if c := s.cl(); c != nil {
		if t := c.raft.Stats().LastSnapshotUnix.Load(); t != 0 {
			return t
		}
		return s.started.Unix()
	}
	if s.node == nil {
		return s.started.Unix()
	}
	return s.node.SnapshotInfo().LastUnix
}

// infoSnapshots writes the rdb_* fields of INFO persistence for a single node.
func infoSnapshots(w func(string, any), si consensus.SnapshotInfo) {
	w("rdb_changes_since_last_save", si.ChangesSinceIt)
	w("rdb_bgsave_in_progress", boolInt(si.Writing))
	w("rdb_last_save_time", si.LastUnix)
	w("rdb_last_bgsave_status", map[bool]string{true: "ok", false: "err"}[si.LastOK])
	w("rdb_last_bgsave_time_sec", secondsOr(si.LastTookMs))
	w("rdb_current_bgsave_time_sec", secondsOr(si.CurrentMs))
	w("rdb_saves", si.Count)
	w("snapshot_index", si.Index)
	w("snapshot_bytes", si.Bytes)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// secondsOr is a duration in ms as Redis's *_time_sec fields show it: whole seconds,
// -1 for none.
func secondsOr(ms int64) int64 {
	if ms < 0 {
		return -1
	}
	return int64(time.Duration(ms) * time.Millisecond / time.Second)
}
