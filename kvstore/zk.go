package kvstore

import (
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/tidwall/btree"
)

// The ZooKeeper data tree: znodes, sessions and their ephemerals, applied through the log
// like every other write (zk_apply.go), so that every replica holds the same tree and
// answers the same zxids. The semantics are ZooKeeper 3.8's PrepRequestProcessor and
// DataTree, collapsed into one deterministic step per transaction: where ZooKeeper checks a
// request against its pending changes and then applies the resulting txn, the applier
// checks and applies at once, under the tree's write lock.

// EphemeralOwner markers of ZooKeeper's EphemeralType: a container carries
// zkContainerOwner; a TTL node carries zkExtendedMask|ttl, its TTL in the low 40 bits.
// Clients never see them: the Stat they get says 0 for both (DataTree.copyStat).
const (
	zkContainerOwner int64 = -1 << 63
	zkExtendedMask   int64 = -1 << 56 // 0xff00000000000000
	zkReservedMask   int64 = 0x00ffff0000000000
	// ZKMaxTTL is the largest TTL (ms) of a TTL node, EphemeralType.TTL's maximum.
	ZKMaxTTL int64 = 1<<40 - 1
)

type zkEphemeralType uint8

const (
	zkVoid      zkEphemeralType = iota // a plain persistent node
	zkNormal                           // an ephemeral node: the owner is its session
	zkContainer                        // a container
	zkTTL                              // a persistent node with a TTL
	zkInvalid                          // an extended owner of an unknown feature
)

func ephemeralType(owner int64) zkEphemeralType {
	switch {
	case owner&zkExtendedMask == zkExtendedMask:
		if owner&zkReservedMask != 0 {
			return zkInvalid
		}
		return zkTTL
	case owner == zkContainerOwner:
		return zkContainer
	case owner == 0:
		return zkVoid
	}
	return zkNormal
}

// znode is one node. data and acl are never modified in place once stored (setData and
// setACL replace them), so readers may keep the slices they were handed.
type znode struct {
	data []byte
	acl  []ZKACL
	// stat is ZooKeeper's StatPersisted: Cversion counts child creates only (the sequence
	// number of the next sequential child), EphemeralOwner holds the raw markers, and
	// NumChildren and DataLength are not kept (see clientStat).
	stat     ZKStat
	children btree.Set[string]
}

// clientStat is the Stat a client sees (DataNode.copyStat): the cversion counts child
// creates and deletes (twice the creates minus the children still there), and containers
// and TTL nodes show no owner.
func (n *znode) clientStat() ZKStat {
	st := n.stat
	nc := int32(n.children.Len())
	st.Cversion = st.Cversion*2 - nc
	st.NumChildren = nc
	st.DataLength = int32(len(n.data))
	if ephemeralType(st.EphemeralOwner) != zkNormal {
		st.EphemeralOwner = 0
	}
	return st
}

// ttl is the node's TTL in ms, 0 for a node that is not a TTL node.
func (n *znode) ttl() int64 {
	if ephemeralType(n.stat.EphemeralOwner) != zkTTL {
		return 0
	}
	return n.stat.EphemeralOwner &^ zkExtendedMask
}

// reapDue reports whether the leader's sweep may delete n at now (ContainerManager): an
// empty container that once had a child, or an empty TTL node not modified for more than
// its TTL.
func (n *znode) reapDue(now int64) bool {
	if n.children.Len() != 0 {
		return false
	}
	switch ephemeralType(n.stat.EphemeralOwner) {
	case zkContainer:
		return n.stat.Cversion > 0
	case zkTTL:
		return now-n.stat.Mtime > n.ttl()
	}
	return false
}

type zkSession struct {
	info       ZKSession
	ephemerals btree.Set[string]
}

// zkTree is the ZooKeeper state of a Store. Only the applier writes it, holding mu; readers
// hold mu shared.
type zkTree struct {
	mu       sync.RWMutex
	nodes    map[string]*znode // by full path; the root is "/"
	sessions map[int64]*zkSession
	// reapable holds the paths of every container and TTL node, for ZKDue.
	reapable btree.Set[string]
	zxid     int64
	// nextSession is the id the next session gets; 0 until the first one is created.
	nextSession int64
	ephemerals  int
	dataBytes   int64 // sum of path and data lengths, ZooKeeper's approximateDataSize
	watch       func(evs []ZKEvent)
}

// Paths ZooKeeper creates itself and never lets a client delete (DataTree.isSpecialPath).
const (
	zkProcPath   = "/zookeeper"
	zkQuotaPath  = "/zookeeper/quota"
	zkConfigPath = "/zookeeper/config"
)

// initTree gives t the tree of a fresh ZooKeeper 3.8: the root, /zookeeper and its quota
// and config nodes, every Stat zero but the config node's aversion (-1), the config node
// readable by anyone and writable by no one.
func (t *zkTree) init() {
	t.nodes = make(map[string]*znode)
	t.sessions = make(map[int64]*zkSession)
	t.reapable = btree.Set[string]{}
	t.zxid, t.nextSession, t.ephemerals, t.dataBytes = 0, 0, 0, 0
	// ZooKeeper's own nodes hold new byte[0], not null (DataTree's constructor).
	t.put("/", &znode{data: []byte{}, acl: ZKOpenACL})
	t.put(zkProcPath, &znode{data: []byte{}, acl: ZKOpenACL})
	t.put(zkQuotaPath, &znode{data: []byte{}, acl: ZKOpenACL})
	t.put(zkConfigPath, &znode{data: []byte{}, acl: []ZKACL{{Perms: ZKPermRead, Scheme: "world", ID: "anyone"}}, stat: ZKStat{Aversion: -1}})
}

// put adds n at path, linking it to its parent (which must exist) and to the indexes.
func (t *zkTree) put(path string, n *znode) {
	t.nodes[path] = n
	t.dataBytes += int64(len(path) + len(n.data))
	if path != "/" {
		parent, name := splitZKPath(path)
		t.nodes[parent].children.Insert(name)
	}
	switch ephemeralType(n.stat.EphemeralOwner) {
	case zkContainer, zkTTL:
		t.reapable.Insert(path)
	case zkNormal:
		if s := t.sessions[n.stat.EphemeralOwner]; s != nil {
			s.ephemerals.Insert(path)
			t.ephemerals++
		}
	}
}

// remove unlinks the node at path from its parent and the indexes.
func (t *zkTree) remove(path string, n *znode) {
	delete(t.nodes, path)
	t.dataBytes -= int64(len(path) + len(n.data))
	parent, name := splitZKPath(path)
	t.nodes[parent].children.Delete(name)
	switch ephemeralType(n.stat.EphemeralOwner) {
	case zkContainer, zkTTL:
		t.reapable.Delete(path)
	case zkNormal:
		if s := t.sessions[n.stat.EphemeralOwner]; s != nil {
			s.ephemerals.Delete(path)
			t.ephemerals--
		}
	}
}

// splitZKPath splits a path that contains a '/' into its parent and last name; the
// parent of "/x" is "/".
func splitZKPath(path string) (parent, name string) {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/", path[i+1:]
	}
	return path[:i], path[i+1:]
}

func isSpecialZKPath(path string) bool {
	return path == "/" || path == zkProcPath || path == zkQuotaPath || path == zkConfigPath
}

// ZKValidatePath reports whether path is a valid znode path (PathUtils.validatePath):
// absolute, no trailing '/' but for the root, no empty, "." or ".." names, no NUL, and no
// character ZooKeeper refuses (controls, U+007F–U+009F, U+D800–U+F8FF, U+FFF0–U+FFFF,
// and anything beyond the BMP, which Java sees as surrogates). Bytes that are not UTF-8
// decode to U+FFFD in ZooKeeper and are refused too.
func ZKValidatePath(path string) bool {
	if path == "" || path[0] != '/' {
		return false
	}
	if len(path) == 1 {
		return true
	}
	for rest, more := path[1:], true; more; {
		var name string
		name, rest, more = strings.Cut(rest, "/")
		if name == "" || name == "." || name == ".." {
			return false
		}
	}
	for _, r := range path {
		// r >= 0xfff0 covers U+FFFD (bad UTF-8) and everything beyond the BMP
		if r < 0x20 || r >= 0x7f && r <= 0x9f || r >= 0xd800 && r <= 0xf8ff || r >= 0xfff0 {
			return false
		}
	}
	return true
}

// ZKCheckPerm reports whether a session with the identities auth may do perm on a node
// with acl (ZooKeeperServer.checkACL): an empty ACL allows everything, a "super" identity
// too; world:anyone matches everyone; digest, sasl and x509 ids match when equal, ip ids
// when the address falls in the ACL's address/bits.
func ZKCheckPerm(acl []ZKACL, perm int32, auth []ZKID) bool {
	if len(acl) == 0 {
		return true
	}
	for _, id := range auth {
		if id.Scheme == "super" {
			return true
		}
	}
	for _, a := range acl {
		if a.Perms&perm == 0 {
			continue
		}
		if a.Scheme == "world" && a.ID == "anyone" {
			return true
		}
		for _, id := range auth {
			if id.Scheme == a.Scheme && zkIDMatches(a.Scheme, id.ID, a.ID) {
				return true
			}
		}
	}
	return false
}

func zkIDMatches(scheme, id, expr string) bool {
	switch scheme {
	case "digest", "sasl", "x509":
		return id == expr
	case "ip":
		return ipMatches(id, expr)
	}
	return false
}

// zkAuthenticated reports whether an identity of scheme counts for the "auth" ACL scheme
// (AuthenticationProvider.isAuthenticated): ip and world identities do not.
func zkAuthenticated(scheme string) bool {
	return scheme == "digest" || scheme == "sasl" || scheme == "x509"
}

// zkValidID reports whether an ACL's id is well formed for its scheme (isValid); ACLs of
// schemes ZooKeeper has no provider for are invalid.
func zkValidID(scheme, id string) bool {
	switch scheme {
	case "world":
		return id == "anyone"
	case "digest":
		return len(javaSplit(id, ':')) == 2
	case "ip":
		addr, bits, hasBits := strings.Cut(id, "/")
		b := ipv4Bytes(addr)
		if b == nil {
			return false
		}
		if hasBits {
			n, err := strconv.Atoi(bits)
			return err == nil && n >= 0 && n <= 32
		}
		return true
	case "sasl", "x509":
		return true
	}
	return false
}

// javaSplit is Java's String.split on one character: trailing empty pieces are dropped.
func javaSplit(s string, sep byte) []string {
	parts := strings.Split(s, string(sep))
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// ipv4Bytes parses a dotted IPv4 address as ZooKeeper 3.8 does (no IPv6), or returns nil.
func ipv4Bytes(s string) []byte {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return nil
	}
	b := make([]byte, 4)
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || v > 255 {
			return nil
		}
		b[i] = byte(v)
	}
	return b
}

func ipMatches(id, expr string) bool {
	addr, bitsStr, hasBits := strings.Cut(expr, "/")
	acl := ipv4Bytes(addr)
	if acl == nil {
		return false
	}
	bits := 32
	if hasBits {
		n, err := strconv.Atoi(bitsStr)
		if err != nil || n < 0 || n > 32 {
			return false
		}
		bits = n
	}
	remote := ipv4Bytes(id)
	if remote == nil {
		return false
	}
	for i := range acl {
		m := 0
		if left := bits - 8*i; left >= 8 {
			m = 0xff
		} else if left > 0 {
			m = 0xff << (8 - left) & 0xff
		}
		if acl[i]&byte(m) != remote[i]&byte(m) {
			return false
		}
	}
	return true
}

// fixupACL checks acl and expands its "auth" entries into the session's authenticated
// identities (PrepRequestProcessor.fixupACL); ok is false for ZInvalidACL.
func fixupACL(acl []ZKACL, auth []ZKID) (out []ZKACL, ok bool) {
	if len(acl) == 0 {
		return nil, false
	}
	for i, a := range acl {
		if slices.Contains(acl[:i], a) {
			continue // removeDuplicates
		}
		switch {
		case a.Scheme == "world" && a.ID == "anyone":
			out = append(out, a)
		case a.Scheme == "auth":
			valid := false
			for _, id := range auth {
				if zkAuthenticated(id.Scheme) {
					valid = true
					out = append(out, ZKACL{Perms: a.Perms, Scheme: id.Scheme, ID: id.ID})
				}
			}
			if !valid {
				return nil, false
			}
		case zkValidID(a.Scheme, a.ID):
			out = append(out, a)
		default:
			return nil, false
		}
	}
	return out, true
}

// --- reads ------------------------------------------------------------------------------

// ZKNode is a znode as readers see it. Data and ACL are shared with the store: callers
// must not modify them.
type ZKNode struct {
	Data []byte
	Stat ZKStat
	ACL  []ZKACL
}

func (n *znode) view() ZKNode { return ZKNode{Data: n.data, Stat: n.clientStat(), ACL: n.acl} }

// ZKGet returns the node at path.
func (s *Store) ZKGet(path string) (ZKNode, bool) {
	t := &s.zk
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := t.nodes[path]
	if n == nil {
		return ZKNode{}, false
	}
	return n.view(), true
}

// ZKChildren returns the node at path and its children's names, sorted.
func (s *Store) ZKChildren(path string) (names []string, node ZKNode, ok bool) {
	t := &s.zk
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := t.nodes[path]
	if n == nil {
		return nil, ZKNode{}, false
	}
	return n.children.Keys(), n.view(), true
}

// ZKAllChildrenNumber counts every descendant of the node at path.
func (s *Store) ZKAllChildrenNumber(path string) (int32, bool) {
	t := &s.zk
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.allChildrenNumber(path)
}

func (t *zkTree) allChildrenNumber(path string) (int32, bool) {
	n := t.nodes[path]
	if n == nil {
		return 0, false
	}
	if path == "/" {
		return int32(len(t.nodes) - 1), true
	}
	var count func(p string, n *znode) int32
	count = func(p string, n *znode) int32 {
		c := int32(0)
		n.children.Scan(func(name string) bool {
			cp := p + "/" + name
			c += 1 + count(cp, t.nodes[cp])
			return true
		})
		return c
	}
	return count(path, n), true
}

// ZKEphemerals returns the paths of the session's ephemeral nodes that start with prefix,
// sorted.
func (s *Store) ZKEphemerals(session int64, prefix string) []string {
	t := &s.zk
	t.mu.RLock()
	defer t.mu.RUnlock()
	se := t.sessions[session]
	if se == nil {
		return nil
	}
	var out []string
	se.ephemerals.Ascend(prefix, func(p string) bool {
		if !strings.HasPrefix(p, prefix) {
			return false
		}
		out = append(out, p)
		return true
	})
	return out
}

// ZKSession returns the session with id.
func (s *Store) ZKSession(id int64) (ZKSession, bool) {
	t := &s.zk
	t.mu.RLock()
	defer t.mu.RUnlock()
	se := t.sessions[id]
	if se == nil {
		return ZKSession{}, false
	}
	return se.info, true
}

// ZKSessions returns every session, sorted by id.
func (s *Store) ZKSessions() []ZKSession {
	t := &s.zk
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.sortedSessions()
}

func (t *zkTree) sortedSessions() []ZKSession {
	out := make([]ZKSession, 0, len(t.sessions))
	for _, se := range t.sessions {
		out = append(out, se.info)
	}
	slices.SortFunc(out, func(a, b ZKSession) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out
}

// ZKLastZxid is the zxid of the last ZooKeeper transaction applied.
func (s *Store) ZKLastZxid() int64 {
	t := &s.zk
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.zxid
}

// ZKCounts reports the number of znodes (the root included), of ephemeral nodes, and the
// sum of path and data lengths (mntr's zk_znode_count, zk_ephemerals_count and
// zk_approximate_data_size).
func (s *Store) ZKCounts() (nodes, ephemerals int, approxDataBytes int64) {
	t := &s.zk
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.nodes), t.ephemerals, t.dataBytes
}

// ZKDue lists, for the leader's sweeps, the sessions whose timeout has passed at now
// (LastTouch+Timeout <= now), sorted by id, and the containers and TTL nodes the Reap
// transaction would delete at now, sorted by path.
func (s *Store) ZKDue(now int64) (sessions []int64, paths []string) {
	t := &s.zk
	t.mu.RLock()
	defer t.mu.RUnlock()
	for id, se := range t.sessions {
		if se.expired(now) {
			sessions = append(sessions, id)
		}
	}
	slices.Sort(sessions)
	t.reapable.Scan(func(p string) bool {
		if t.nodes[p].reapDue(now) {
			paths = append(paths, p)
		}
		return true
	})
	return sessions, paths
}

func (se *zkSession) expired(now int64) bool {
	return se.info.LastTouch+int64(se.info.Timeout) <= now
}

// SetZKWatcher sets the function the applier hands each transaction's watch events to,
// in ZooKeeper's trigger order. It is called on the applier's goroutine with the tree's
// write lock held, so that no reader sees a change before its event is handed over: f
// must only queue the events (the slice is reused once f returns: f copies what it
// keeps), never block and never call back into the store.
func (s *Store) SetZKWatcher(f func(evs []ZKEvent)) {
	s.zk.mu.Lock()
	s.zk.watch = f
	s.zk.mu.Unlock()
}
