package server

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	"github.com/nanokv/nanokv/consensus"
	"github.com/nanokv/nanokv/kvstore"
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

var _ resp.RDBDumper = (*Server)(nil)

// BeginRDB implements resp.RDBDumper: it writes a snapshot now, as SAVE does (waiting for
// one already being written to end first, since it may have begun before writes this
// one must hold), and converts the newest snapshot file, which is at least as new, to
// an RDB file.
func (s *Server) BeginRDB(opt kvstore.RDBOptions) (func(io.Writer) error, error) {
	opt.Now = time.Now().UnixMilli()
	if !opt.Keys && !opt.Functions {
		return func(w io.Writer) error {
			if w == nil {
				return nil
			}
			return kvstore.WriteRDB(nil, w, opt)
		}, nil
	}
	for deadline := time.Now().Add(time.Minute); ; {
		err := s.Save(false)
		if err == nil {
			break
		}
		if !errors.Is(err, errSaveRunning) || time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(10 * time.Millisecond)
	}
	var f *os.File
	var err error
	switch c := s.cl(); {
	case c != nil:
		f, _, err = c.raft.OpenSnapshot()
	case s.node != nil:
		f, _, err = s.node.OpenSnapshot()
	default:
		return nil, errNoCluster
	}
	if errors.Is(err, consensus.ErrNoSnapshots) {
		return nil, errNoSnapshots
	}
	if err != nil {
		return nil, err
	}
	return func(w io.Writer) error {
		defer f.Close()
		if w == nil {
			return nil
		}
		return kvstore.WriteRDB(f, w, opt)
	}, nil
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

// snapshotInfo is what the node's snapshots are, of a single node or a member; false on
// a node that is neither yet (joining a cluster).
func (s *Server) snapshotInfo() (consensus.SnapshotInfo, bool) {
	if c := s.cl(); c != nil {
		return c.raft.SnapshotInfo(), true
	}
	if s.node == nil {
		return consensus.SnapshotInfo{}, false
	}
	return s.node.SnapshotInfo(), true
}

// infoSnapshots writes the rdb_* fields of INFO persistence, of a single node or a member.
func infoSnapshots(w func(string, any), si consensus.SnapshotInfo) {
	w("rdb_changes_since_last_save", si.ChangesSinceIt)
	w("rdb_bgsave_in_progress", boolInt(si.Writing))
	w("rdb_last_save_time", si.LastUnix)
	w("rdb_last_bgsave_status", map[bool]string{true: "ok", false: "err"}[si.LastOK])
	w("rdb_last_bgsave_time_sec", secondsOr(si.LastTookMs))
	w("rdb_current_bgsave_time_sec", secondsOr(si.CurrentMs))
	w("rdb_saves", si.Count)
	w("rdb_last_cow_size", 0)
}

// INFO persistence is Redis 7.0's fields in its order, then nanokv's. A snapshot is
// written from a copy-on-write view in the process, not by a forked child: Redis's
// fork and copy-on-write fields are 0. The WAL is the AOF (aof_enabled); it is never
// rewritten: snapshots let its head go instead.

// infoLoading is INFO persistence's head: nothing is loaded once the node serves.
func infoLoading(w func(string, any)) {
	w("loading", 0)
	w("async_loading", 0)
	for _, k := range []string{"current_cow_peak", "current_cow_size", "current_cow_size_age"} {
		w(k, 0)
	}
	w("current_fork_perc", "0.00")
	w("current_save_keys_processed", 0)
	w("current_save_keys_total", 0)
}

// infoAOF is INFO persistence's AOF fields, for the WAL.
func infoAOF(w func(string, any), enabled, failed bool) {
	w("aof_enabled", boolInt(enabled))
	w("aof_rewrite_in_progress", 0)
	w("aof_rewrite_scheduled", 0)
	w("aof_last_rewrite_time_sec", -1)
	w("aof_current_rewrite_time_sec", -1)
	w("aof_last_bgrewrite_status", "ok")
	w("aof_rewrites", 0)
	w("aof_rewrites_consecutive_failures", 0)
	w("aof_last_write_status", map[bool]string{false: "ok", true: "err"}[failed])
	w("aof_last_cow_size", 0)
	w("module_fork_in_progress", 0)
	w("module_fork_last_cow_size", 0)
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
