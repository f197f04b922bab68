package resp

import (
	"bytes"
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
}

// sharding reports whether the backend answers as RedisRaft's sharding does.
func (s *Server) sharding() bool { return s.shardOn != nil && s.shardOn.Load() }

// crossSlot is Redis Cluster's (and RedisRaft's) refusal of keys in several slots.
const crossSlot = "CROSSSLOT Keys in request don't hash to the same slot"

// shardRoute, called while sharding is on, checks a command as a Redis Cluster node
// checks it: keys in different slots are refused (CROSSSLOT); on a follower, the
// client is sent to the leader with -MOVED <the key's slot> <leader>, which a
// cluster-aware client applies to that slot (redis-py moves only the slot the reply
// names: RedisRaft's -MOVED 0 made it move slot 0 and send the key to the old leader
// again). A command without keys says slot 0, as RedisRaft. Commands queued in a
// transaction are checked at EXEC. false: the command runs here.
func (c *conn) shardRoute(args [][]byte, spec *kvstore.Spec) bool {
	if !spec.CheckArity(args) {
		return false
	}
	leader := c.s.sharder.ShardLeader()
	var buf [4][]byte
	slot, ok := commonSlot(spec.Keys(buf[:0], args), -1)
	if ok && leader == "" {
		return false
	}
	c.flushBatch()
	c.s.b.Store().CommandStats(spec, args).Reject() // Redis counts a redirection as rejected
	if !ok {
		c.Error(crossSlot)
	} else {
		c.Error("MOVED " + strconv.Itoa(max(slot, 0)) + " " + leader)
	}
	return true
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

// txCrossSlot reports whether a transaction's commands, together, name keys in more
// than one slot while sharding is on: EXEC is then refused, as Redis Cluster refuses it.
func (c *conn) txCrossSlot(queued []kvstore.TxCommand) bool {
	if !c.s.sharding() {
		return false
	}
	slot := -1
	var buf [4][]byte
	for _, q := range queued {
		spec := kvstore.Lookup(q.Args[0])
		if spec == nil {
			continue // a connection's command queued: none of them names keys
		}
		var ok bool
		if slot, ok = commonSlot(spec.Keys(buf[:0], q.Args), slot); !ok {
			return true
		}
	}
	return false
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
