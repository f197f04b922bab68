package resp

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/nanokv/nanokv/internal/netserve"
	"github.com/nanokv/nanokv/kvstore"
)

// SYNC and PSYNC, for a snapshot only: what `redis-cli --rdb file` (and
// `--functions-rdb`) take a backup with. The client says REPLCONF rdb-only 1 (or
// rdb-filter-only) first; it gets the data as an RDB file, as a Redis master sends it to
// a replica, and the connection closes after it, as Redis closes it. A Redis replica
// would go on to receive the replication stream, which nanokv does not send: its members
// replicate by Raft, and a SYNC without rdb-only is refused.

// RDBDumper is a Backend that can give its data as a Redis RDB file.
type RDBDumper interface {
	// BeginRDB takes a snapshot of everything acknowledged so far (unless opt asks for
	// neither keys nor functions) and returns the function that writes it to w as an RDB
	// file, to be called once; write(nil) lets the snapshot go unwritten. The backend
	// sets opt.Now.
	BeginRDB(opt kvstore.RDBOptions) (write func(w io.Writer) error, err error)
}

// replState is what REPLCONF told a connection about the snapshot it will ask for.
type replState struct {
	rdbOnly bool // rdb-only 1: a snapshot, without the replication stream
	capaEOF bool // capa eof: the snapshot may come with an end mark instead of a length
	// rdb-filter-only: filtered is set, and which parts the client wants
	filtered, wantFunctions bool
}

// replconfCommand is REPLCONF option value ..., with Redis 7.0's checks and errors.
func replconfCommand(c *conn, args [][]byte) {
	if len(args)%2 == 0 {
		c.Error(kvstore.ErrSyntax)
		return
	}
	for j := 1; j < len(args); j += 2 {
		v := args[j+1]
		switch strings.ToLower(string(args[j])) {
		case "listening-port":
			if _, err := strconv.ParseInt(string(v), 10, 64); err != nil {
				c.Error(kvstore.ErrNotInteger)
				return
			}
		case "ip-address":
			if len(v) >= 256 { // NET_HOST_STR_LEN
				c.Error("ERR REPLCONF ip-address provided by replica instance is too long: " + strconv.Itoa(len(v)) + " bytes")
				return
			}
		case "capa":
			if strings.EqualFold(string(v), "eof") {
				c.repl.capaEOF = true
			}
		case "ack", "getack":
			return // a replica's, and answered with nothing
		case "rdb-only":
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil {
				c.Error(kvstore.ErrNotInteger)
				return
			}
			if n < 0 || n > 1 {
				c.Error("ERR value is out of range, value must between 0 and 1")
				return
			}
			c.repl.rdbOnly = n == 1
		case "rdb-filter-only":
			filters, ok := kvstore.SplitArgs(v, nil)
			if !ok {
				c.Error("ERR Missing rdb-filter-only values")
				return
			}
			c.repl.filtered, c.repl.wantFunctions = true, false
			for _, f := range filters {
				if !strings.EqualFold(string(f), "functions") {
					c.Error("ERR Unsupported rdb-filter-only option: " + string(f))
					return
				}
				c.repl.wantFunctions = true
			}
		default:
			c.Error("ERR Unrecognized REPLCONF option: " + string(args[j]))
			return
		}
	}
	c.Status("OK")
}

// syncCommand is SYNC and PSYNC replid offset: the data as an RDB file, after
// +FULLRESYNC for PSYNC, then the connection closes.
func syncCommand(c *conn, args [][]byte) {
	psync := strings.EqualFold(string(args[0]), "psync")
	if psync {
		if _, err := strconv.ParseInt(string(args[2]), 10, 64); err != nil {
			c.Error(kvstore.ErrNotInteger)
			return
		}
	}
	switch {
	case c.monitoring:
		return // a monitor is a replica to Redis, which ignores its SYNC
	case len(c.B) > 0 || c.sub != nil: // a subscriber's replies go out from its queue
		c.Error("ERR SYNC and PSYNC are invalid with pending output")
		return
	case c.repl.filtered && !c.repl.capaEOF:
		c.Error("ERR Filtered replica requires EOF capability")
		return
	case !c.repl.rdbOnly && !c.repl.filtered:
		c.Error("ERR nanokv sends no replication stream (its members replicate by Raft): send REPLCONF rdb-only 1 first for a snapshot, as redis-cli --rdb does")
		return
	}
	d, ok := c.s.b.(RDBDumper)
	if !ok {
		c.Error("ERR this server keeps no snapshots")
		return
	}
	opt := kvstore.RDBOptions{RedisVersion: c.s.config().RedisVersion, Keys: !c.repl.filtered, Functions: !c.repl.filtered || c.repl.wantFunctions}
	// From here the client waits for a snapshot and its file: no timeout cuts it off
	// (idle.go), as none cuts off Redis's replicas.
	c.shared.syncing.Store(true)
	write, err := d.BeginRDB(opt)
	if err != nil {
		c.shared.syncing.Store(false)
		c.Error(errorReply(err))
		return
	}
	c.closeNext = true
	if psync {
		c.Status("FULLRESYNC " + c.s.ids.repl + " 0")
	}
	out := &countingWriter{w: c.nc, s: c.s}
	if c.repl.capaEOF {
		// The file with an end mark, as Redis sends it without a disk: written as it is
		// made, with no length to know first.
		mark := make([]byte, 20)
		rand.Read(mark)
		eof := hex.EncodeToString(mark)
		c.B = append(append(append(c.B, "$EOF:"...), eof...), "\r\n"...)
		if !c.flushOut() {
			write(nil)
		} else if write(out) == nil {
			io.WriteString(out, eof)
		}
		return
	}
	// Without capa eof the file comes after its length, so it is spooled first, as
	// Redis writes it to disk first: to an unlinked file in the data directory, not to
	// memory, where a large dataset would double the process's heap.
	file, err := os.CreateTemp(c.s.b.ConfigGet()["dir"], "sync-*.rdb")
	if err != nil {
		write(nil)
		c.Error(errorReply(err))
		return
	}
	os.Remove(file.Name())
	defer file.Close()
	var size int64
	if err = write(file); err == nil {
		size, err = file.Seek(0, io.SeekCurrent)
	}
	if err == nil {
		_, err = file.Seek(0, io.SeekStart)
	}
	if err != nil {
		c.Error(errorReply(err))
		return
	}
	c.B = append(strconv.AppendInt(append(c.B, '$'), size, 10), "\r\n"...)
	if c.flushOut() {
		io.Copy(out, file)
	}
}

// countingWriter writes to the connection and counts the bytes as replies are counted.
type countingWriter struct {
	w io.Writer
	s *Server
}

func (cw *countingWriter) Write(p []byte) (int, error) {
	n, err := cw.w.Write(p)
	cw.s.stats.netOut.Add(uint64(n))
	cw.s.stats.writes.Add(1)
	netserve.CountWritten(n)
	return n, err
}
