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

func (c *conn) saver() (Saver, bool) {
	sv, ok := c.s.b.(Saver)
	if !ok {
		c.Error("ERR this server keeps no snapshots")
	}
	return sv, ok
}

func saveCommand(c *conn, _ [][]byte) {
	if sv, ok := c.saver(); ok {
		if err := sv.Save(false); err != nil {
			c.Error(errorReply(err))
			return
		}
		c.Status("OK")
	}
}

func bgsaveCommand(c *conn, args [][]byte) {
	if len(args) > 2 || (len(args) == 2 && !strings.EqualFold(string(args[1]), "schedule")) {
		c.Error(kvstore.ErrSyntax)
		return
	}
	if sv, ok := c.saver(); ok {
		if err := sv.Save(true); err != nil {
			c.Error(errorReply(err))
			return
		}
		c.Status("Background saving started")
	}
}

func bgrewriteaofCommand(c *conn, _ [][]byte) {
	if sv, ok := c.saver(); ok {
		if err := sv.Save(true); err != nil {
			if strings.Contains(errorReply(err), "already in progress") {
				c.Error("ERR Background append only file rewriting already in progress")
				return
			}
			c.Error(errorReply(err))
			return
		}
		c.Status("Background append only file rewriting started")
	}
}

func lastsaveCommand(c *conn, _ [][]byte) {
	if sv, ok := c.s.b.(Saver); ok {
		c.Int(sv.LastSave())
		return
	}
	c.Int(c.s.start.Unix())
}
