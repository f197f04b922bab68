package resp

import (
	"strings"

	"github.com/nanokv/nanokv/kvstore"
)

// Used memory over maxmemory refuses commands as Redis 7.0's processCommand refuses
// them under the noeviction policy, or when an evicting policy finds nothing to evict
// (memlimit.Gauge.Refusing; under one that does, the leader evicts and commands go
// on): a command flagged denyoom,
// a script or function whose flags let it write without allow-oom, an EXEC whose
// transaction holds either, and anything but EXEC, DISCARD, QUIT and RESET inside
// MULTI (queuing takes memory too). The refusal comes after the name, arity and ACL
// checks and before everything else, and is Redis's reply. The memory is the node's
// own (internal/memlimit); a command refused never reaches the log, so replicas stay
// identical whatever their memory. A script without flags runs, and fails at its first
// denyoom call unless it has written already: its log entry carries the mark
// (overMemoryMark) that makes every replica decide so alike.

// maxmemoryPolicies are Redis's maxmemory-policy values, in the order its error lists
// them (kvstore.EvictPolicy).
var maxmemoryPolicies = []string{"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction"}

// refusedForMemory refuses the command, and reports so, when used memory is over
// maxmemory and Redis would refuse it then. cs and spec are as handle found them.
func (c *conn) refusedForMemory(args [][]byte, spec *kvstore.Spec, cs *connSpec) bool {
	if !c.s.mem.Refusing() {
		return false
	}
	sp := spec
	if cs != nil {
		sp = &cs.Spec
	}
	if sp == nil || !sp.CheckArity(args) {
		return false // refused for its name or arity, as Redis checks those first
	}
	name := strings.ToLower(string(args[0]))
	refuse := c.deniesOOM(sp, args)
	if c.inMulti {
		switch name {
		case "exec":
			for _, q := range c.queued {
				if spec := kvstore.Lookup(q.Args[0]); spec != nil && c.deniesOOM(spec, q.Args) {
					refuse = true
				}
			}
		case "discard", "quit", "reset":
		default:
			refuse = true
		}
	}
	if !refuse {
		return false
	}
	if cs != nil {
		c.s.cmdStats(cs, args).Reject()
	} else {
		c.s.b.Store().CommandStats(spec, args).Reject()
	}
	c.flushBatch()
	if name == "exec" && c.inMulti {
		c.abortExec(kvstore.ErrOOM, args)
		return true
	}
	if c.inMulti {
		c.multiErr = true
	}
	c.Error(kvstore.ErrOOM)
	return true
}

// deniesOOM reports whether a call is one Redis refuses over maxmemory: a denyoom
// command, or a script or function whose flags let it write without allow-oom.
func (c *conn) deniesOOM(spec *kvstore.Spec, args [][]byte) bool {
	if spec.Flags&kvstore.FlagDenyOOM != 0 {
		return true
	}
	return runsScript(spec) && c.s.b.Store().ScriptDeniesOOM(args)
}

// overMemoryMark is what goes before an entry's script op proposed now: the mark that
// makes every replica refuse the script's first denyoom call when this node is over
// maxmemory (kvstore.AppendOverMemory), nothing otherwise.
func (c *conn) overMemoryMark(dst []byte) []byte {
	if c.s.mem.Refusing() {
		return kvstore.AppendOverMemory(dst)
	}
	return dst
}
