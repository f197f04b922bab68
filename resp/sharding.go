package resp

import (
	"bytes"
	"context"
	"strconv"
	"sync/atomic"

	"github.com/nanokv/nanokv/kvstore"
)

// Sharder is implemented by a backend that may answer cluster-aware clients as
// RedisRaft with sharding enabled does: CLUSTER SLOTS and CLUSTER NODES describe one
// shard group holding every slot, INFO says cluster_enabled:1, and a command whose keys
// hash to different slots is refused.
type Sharder interface {
	// ShardingSwitch is the switch that turns sharding on and off. It is the same for
	// the backend's life, so that every command reads it without a call.
	ShardingSwitch() *atomic.Bool
	// ShardLeader is the leader's Redis address while this member sends its clients
	// there (a follower that knows its leader and does not proxy), else "".
	ShardLeader() string
	// ClusterCommand answers CLUSTER ... while sharding is on.
	ClusterCommand(args [][]byte, w kvstore.ReplyWriter)
	// ReplicaReadBarrier is ReadBarrier for a connection that sent READONLY: it also
	// passes on a follower, once the follower has applied everything committed before
	// it was asked.
	ReplicaReadBarrier(ctx context.Context) error
}

// sharding reports whether the backend answers as RedisRaft's sharding does.
func (s *Server) sharding() bool { return s.shardOn != nil && s.shardOn.Load() }

// crossSlot is Redis Cluster's (and RedisRaft's) refusal of keys in several slots.
const crossSlot = "CROSSSLOT Keys in request don't hash to the same slot"

// shardRoute, called while sharding is on, checks a command as a Redis Cluster node
// checks it before it runs (its redirection), and answers it if it may not run here:
//   - A command that names keys (the store's, given as spec, or WATCH, given as cs) is
//     refused if they hash to different slots (CROSSSLOT). On a follower, the client
//     is sent to the leader with -MOVED <the key's slot> <leader>, which a
//     cluster-aware client applies to that slot (redis-py moves only the slot the
//     reply names: RedisRaft's -MOVED 0 made it move slot 0 and send the key to the
//     old leader again). A store command without keys says slot 0, as RedisRaft.
//   - Inside MULTI, such a refusal aborts the transaction (EXECABORT at EXEC), and EXEC
//     checks the queued commands together (txShardRefusal); its refusal discards them.
//
// A refusal is counted as a rejected call, as Redis counts it. false: the command runs.
func (c *conn) shardRoute(args [][]byte, spec *kvstore.Spec, cs *connSpec) bool {
	var msg string
	switch {
	case cs == nil && spec != nil || cs != nil && cs.FirstKey > 0:
		if cs != nil {
			spec = &cs.Spec
		}
		if !spec.CheckArity(args) {
			return false
		}
		var buf [4][]byte
		slot, ok := commonSlot(spec.Keys(buf[:0], args), -1)
		if ok && cs == nil && c.readsHere(spec, args) {
			return false
		}
		if msg = c.slotRefusal(slot, ok); msg == "" {
			return false
		}
		c.multiErr = c.multiErr || c.inMulti
	case cs != nil && cs.txCtrl && cs.Name == "exec" && c.inMulti && !c.multiErr && cs.CheckArity(args):
		if msg = c.txShardRefusal(c.queued); msg == "" {
			return false
		}
		c.inMulti, c.queued, c.watches = false, nil, nil
	default:
		return false
	}
	c.flushBatch()
	if cs != nil {
		c.s.cmdStats(cs, args).Reject()
	} else {
		c.s.b.Store().CommandStats(spec, args).Reject()
	}
	c.Error(msg)
	return true
}

// readsHere reports whether a follower serves this store command itself, as a Redis
// Cluster replica serves a client that sent READONLY: the connection did, and the
// command reads. Not inside MULTI: every EXEC is an entry of the leader's log. The read
// stays linearizable: it waits for the replica's barrier (readBarrier).
func (c *conn) readsHere(spec *kvstore.Spec, args [][]byte) bool {
	return c.readonly && !c.inMulti && spec.Flags&kvstore.FlagBlocking == 0 && !spec.Writes(args)
}

// readonlyCommand is READONLY (on) and READWRITE: with sharding, they turn the
// connection's replica reads (readsHere) on and off, as on a Redis Cluster node, which
// answers +OK whatever its role. Without sharding they are refused as by a Redis
// without cluster support.
func readonlyCommand(on bool) func(*conn, [][]byte) {
	return func(c *conn, _ [][]byte) {
		if !c.s.sharding() {
			c.Error(errNoCluster)
			return
		}
		c.setReadonly(on)
		c.Status("OK")
	}
}

// setReadonly turns replica reads on or off, and shows it in CLIENT LIST (flag r).
func (c *conn) setReadonly(on bool) {
	c.readonly = on
	c.shared.replica.Store(on)
}

// askingCommand is ASKING: a Redis Cluster client sends it before it follows an -ASK
// redirection, which only a slot's migration answers. nanokv's one shard group never
// migrates a slot, so with sharding it is answered +OK and changes nothing.
func askingCommand(c *conn, _ [][]byte) {
	if !c.s.sharding() {
		c.Error(errNoCluster)
		return
	}
	c.Status("OK")
}

// slotRefusal refuses what names keys in more than one slot (ok false: CROSSSLOT), and
// on a follower sends the client to the leader with the slot (-1: no key, said as slot
// 0, as RedisRaft); "" if it runs here.
func (c *conn) slotRefusal(slot int, ok bool) string {
	if !ok {
		return crossSlot
	}
	if leader := c.s.sharder.ShardLeader(); leader != "" {
		return "MOVED " + strconv.Itoa(max(slot, 0)) + " " + leader
	}
	return ""
}

// commonSlot is the slot all keys hash to, given slot, the one found so far (-1: none
// yet); false if they hash to more than one.
func commonSlot(keys [][]byte, slot int) (int, bool) {
	for _, k := range keys {
		switch ks := KeySlot(k); {
		case slot < 0:
			slot = ks
		case ks != slot:
			return slot, false
		}
	}
	return slot, true
}

// txShardRefusal checks a transaction at EXEC while sharding is on, as Redis Cluster
// checks it: the keys of its commands, together, must hash to one slot (else
// CROSSSLOT), and a follower (one that has stopped leading since they were queued, or
// whose transaction names no key) sends the client to the leader, as every EXEC is an
// entry of the leader's log. The refusal, "" if none, discards the transaction.
func (c *conn) txShardRefusal(queued []kvstore.TxCommand) string {
	slot, ok := -1, true
	var buf [4][]byte
	for _, q := range queued {
		spec := kvstore.Lookup(q.Args[0])
		if spec == nil {
			continue // a connection's command queued: none of them names keys
		}
		if slot, ok = commonSlot(spec.Keys(buf[:0], q.Args), slot); !ok {
			break
		}
	}
	return c.slotRefusal(slot, ok)
}

// KeySlot is Redis Cluster's hash slot of key: CRC16 (XMODEM) of the key, or of its
// hash tag (what is between the first { and the next } when that is not empty),
// modulo 16384.
func KeySlot(key []byte) int {
	if open := bytes.IndexByte(key, '{'); open >= 0 {
		if end := bytes.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	return int(crc16(key) & 16383)
}

// crc16Table is CRC-16/XMODEM's (polynomial 0x1021, no reflection), the CRC Redis
// Cluster hashes keys with.
var crc16Table = func() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}()

func crc16(b []byte) uint16 {
	var crc uint16
	for _, ch := range b {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^ch]
	}
	return crc
}
