package resp

import (
	"strings"

	"github.com/nanokv/nanokv/kvstore"
)

// Saver is a Backend that writes snapshots on demand: SAVE, BGSAVE, BGREWRITEAOF (a
// snapshot drops the log before it, which is what an AOF rewrite is for) and LASTSAVE.
type Saver interface {
	// Save writes a snapshot of everything acknowledged so far; with background it
	// returns once the snapshot has begun.
	Save(background bool) error
	// LastSave is when the last snapshot was written (unix s), or when the node started.
	LastSave() int64
}

// save asks the backend for a snapshot and replies ok, or the error (running: the
// error for a snapshot already being written, "" for the backend's own).
func (c *conn) save(background bool, ok, running string) {
	sv, is := c.s.b.(Saver)
	if !is {
		c.Error("ERR this server keeps no snapshots")
		return
	}
	if err := sv.Save(background); err != nil {
		if msg := errorReply(err); running == "" || !strings.Contains(msg, "already in progress") {
			c.Error(msg)
		} else {
			c.Error(running)
		}
		return
	}
	c.Status(ok)
}

func saveCommand(c *conn, _ [][]byte) { c.save(false, "OK", "") }

func bgsaveCommand(c *conn, args [][]byte) {
	if len(args) > 2 || (len(args) == 2 && !strings.EqualFold(string(args[1]), "schedule")) {
		c.Error(kvstore.ErrSyntax)
		return
	}
	c.save(true, "Background saving started", "")
}

func bgrewriteaofCommand(c *conn, _ [][]byte) {
	c.save(true, "Background append only file rewriting started", "ERR Background append only file rewriting already in progress")
}

func lastsaveCommand(c *conn, _ [][]byte) {
	if sv, ok := c.s.b.(Saver); ok {
		c.Int(sv.LastSave())
		return
	}
	c.Int(c.s.start.Unix())
}
