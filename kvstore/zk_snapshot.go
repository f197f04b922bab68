package kvstore

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/cespare/xxhash/v2"
)

// The ZooKeeper section of a snapshot (integers varint unless said otherwise):
//
//	zxid nextSession nsessions:uvarint session* nnodes:uvarint node*
//	session := id timeout passwd:16 bytes lastTouch                    by id
//	node    := path:bytes data:zkdata czxid mzxid ctime mtime version cversion aversion
//	           ephemeralOwner pzxid nacl:uvarint (perms scheme:bytes id:bytes)*   by path
//
// Stats are ZooKeeper's persisted ones (cversion counts creates, owners keep their
// markers). Children, numChildren, dataLength and the ephemeral and reap indexes follow
// from the nodes and are rebuilt.

func appendZKSession(dst []byte, se *ZKSession) []byte {
	dst = binary.AppendVarint(dst, se.ID)
	dst = binary.AppendVarint(dst, int64(se.Timeout))
	dst = append(dst, se.Passwd[:]...)
	return binary.AppendVarint(dst, se.LastTouch)
}

func appendZNode(dst []byte, path string, n *znode) []byte {
	dst = appendBytes(dst, path)
	dst = appendZKData(dst, n.data)
	st := &n.stat
	for _, v := range [...]int64{st.Czxid, st.Mzxid, st.Ctime, st.Mtime, int64(st.Version),
		int64(st.Cversion), int64(st.Aversion), st.EphemeralOwner, st.Pzxid} {
		dst = binary.AppendVarint(dst, v)
	}
	dst = binary.AppendUvarint(dst, uint64(len(n.acl)))
	for _, a := range n.acl {
		dst = binary.AppendVarint(dst, int64(a.Perms))
		dst = appendBytes(dst, a.Scheme)
		dst = appendBytes(dst, a.ID)
	}
	return dst
}

// appendSnapshot appends the tree. Like Store.Snapshot it runs on the applier, so it
// needs no lock.
func (t *zkTree) appendSnapshot(dst []byte) []byte {
	dst = binary.AppendVarint(dst, t.zxid)
	dst = binary.AppendVarint(dst, t.nextSession)
	sessions := t.sortedSessions()
	dst = binary.AppendUvarint(dst, uint64(len(sessions)))
	for i := range sessions {
		dst = appendZKSession(dst, &sessions[i])
	}
	dst = binary.AppendUvarint(dst, uint64(len(t.nodes)))
	for _, p := range sortedKeys(t.nodes) {
		dst = appendZNode(dst, p, t.nodes[p])
	}
	return dst
}

func (r *snapReader) int32() int32 {
	v := r.varint()
	if r.err == nil && int64(int32(v)) != v {
		r.err = fmt.Errorf("%w: %d is not an int32", ErrBadSnapshot, v)
	}
	return int32(v)
}

// restore reads the tree into t, a fresh one (New's), checking what the applier relies on:
// paths valid, each node after its parent, owners of known sessions.
func (t *zkTree) restore(r *snapReader) error {
	*t = zkTree{nodes: make(map[string]*znode), sessions: make(map[int64]*zkSession)}
	t.zxid = r.varint()
	t.nextSession = r.varint()
	ns := r.uvarint()
	for i := uint64(0); i < ns && r.err == nil; i++ {
		var info ZKSession
		info.ID = r.varint()
		info.Timeout = r.int32()
		if r.err == nil {
			if _, err := io.ReadFull(r.r, info.Passwd[:]); err != nil {
				r.err = fmt.Errorf("%w: %v", ErrBadSnapshot, err)
			}
		}
		info.LastTouch = r.varint()
		if r.err == nil && t.sessions[info.ID] != nil {
			return fmt.Errorf("%w: session %#x twice", ErrBadSnapshot, info.ID)
		}
		t.sessions[info.ID] = &zkSession{info: info}
	}
	nn := r.uvarint()
	last := ""
	for i := uint64(0); i < nn && r.err == nil; i++ {
		path := string(r.bytes())
		n := &znode{data: zkData(r.bytes())}
		st := &n.stat
		st.Czxid, st.Mzxid, st.Ctime, st.Mtime = r.varint(), r.varint(), r.varint(), r.varint()
		st.Version, st.Cversion, st.Aversion = r.int32(), r.int32(), r.int32()
		st.EphemeralOwner, st.Pzxid = r.varint(), r.varint()
		na := r.uvarint()
		for j := uint64(0); j < na && r.err == nil; j++ {
			n.acl = append(n.acl, ZKACL{Perms: r.int32(), Scheme: string(r.bytes()), ID: string(r.bytes())})
		}
		if r.err != nil {
			break
		}
		if !ZKValidatePath(path) || (i == 0) != (path == "/") || i > 0 && path <= last {
			return fmt.Errorf("%w: znode %q out of place", ErrBadSnapshot, path)
		}
		if path != "/" {
			if parent, _ := splitZKPath(path); t.nodes[parent] == nil {
				return fmt.Errorf("%w: znode %q without a parent", ErrBadSnapshot, path)
			}
		}
		switch ephemeralType(st.EphemeralOwner) {
		case zkInvalid:
			return fmt.Errorf("%w: znode %q owner %#x", ErrBadSnapshot, path, st.EphemeralOwner)
		case zkNormal:
			if t.sessions[st.EphemeralOwner] == nil {
				return fmt.Errorf("%w: znode %q of unknown session %#x", ErrBadSnapshot, path, st.EphemeralOwner)
			}
		}
		t.put(path, n)
		last = path
	}
	if r.err != nil {
		return r.err
	}
	if t.nodes["/"] == nil {
		return fmt.Errorf("%w: no root znode", ErrBadSnapshot)
	}
	return nil
}

// replace takes over the state of fresh (Restore), keeping the watcher.
func (t *zkTree) replace(fresh *zkTree) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.nodes, t.sessions, t.reapable = fresh.nodes, fresh.sessions, fresh.reapable
	t.zxid, t.nextSession, t.ephemerals, t.dataBytes = fresh.zxid, fresh.nextSession, fresh.ephemerals, fresh.dataBytes
}

// digest hashes the tree's state for Store.Digest; per-node hashes are summed, so the
// map's order does not matter.
func (t *zkTree) digest() uint64 {
	var sum uint64
	var buf []byte
	for p, n := range t.nodes {
		buf = appendZNode(append(buf[:0], 'n'), p, n)
		sum += xxhash.Sum64(buf)
	}
	for _, se := range t.sessions {
		buf = appendZKSession(append(buf[:0], 's'), &se.info)
		sum += xxhash.Sum64(buf)
	}
	buf = binary.AppendVarint(append(buf[:0], 'z'), t.zxid)
	buf = binary.AppendVarint(buf, t.nextSession)
	return sum + xxhash.Sum64(buf)
}
