package kvstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// opZK is one ZooKeeper transaction (AppendZK):
//
//	zk     := kind:byte session:varint nauth:uvarint (scheme:bytes id:bytes)*
//	          nops:uvarint zkop* timeout:varint nsessions:uvarint session:varint*
//	          npaths:uvarint path:bytes*
//	zkop   := type:varint path:bytes data:zkdata nacl:uvarint (perms:varint scheme:bytes id:bytes)*
//	          mode:varint version:varint ttl:varint
const opZK byte = 5

// appendZKData appends znode data as zkdata: bytes holding nothing for null, and 0x00
// then the data otherwise. ZooKeeper keeps a null byte[] and an empty one apart, and so
// do its clients: getData answers length −1 for the first (Java's null) and 0 for the
// second, and a Java client that created a node with new byte[0] reads it back as such.
func appendZKData(dst, data []byte) []byte {
	if data == nil {
		return binary.AppendUvarint(dst, 0)
	}
	dst = binary.AppendUvarint(dst, uint64(len(data))+1)
	return append(append(dst, 0), data...)
}

// zkData decodes what appendZKData wrote, read as bytes, into a copy.
func zkData(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return bytes.Clone(b[1:])
}

// ZKTxnKind says what a ZKTxn does.
type ZKTxnKind uint8

const (
	ZKTxnOp             ZKTxnKind = iota + 1 // one write op of a session (Ops has exactly one)
	ZKTxnMulti                               // multi (opcode 14): Ops in order, atomically
	ZKTxnCreateSession                       // Timeout (ms, already negotiated by the frontend)
	ZKTxnCloseSession                        // Session
	ZKTxnTouch                               // Sessions: mark them alive at the entry's time
	ZKTxnExpireSessions                      // Sessions: the leader's sweep; each is closed only if still expired at the entry's time
	ZKTxnReap                                // Paths: the leader's sweep of empty containers and expired TTL nodes; each deleted only if still due
)

// ZKOp is one write operation.
type ZKOp struct {
	Type    int32 // ZKOpCreate, ZKOpCreate2, ZKOpCreateContainer, ZKOpCreateTTL, ZKOpDelete, ZKOpSetData, ZKOpSetACL, ZKOpCheck
	Path    string
	Data    []byte
	ACL     []ZKACL
	Mode    int32 // create mode (ZKPersistent ...)
	Version int32 // expected version, -1 = any (delete, setData, setACL (aversion), check)
	TTL     int64 // ms, createTTL
}

// ZKTxn is one ZooKeeper transaction as the frontend proposes it.
type ZKTxn struct {
	Kind     ZKTxnKind
	Session  int64  // the requesting session (Op, Multi, CloseSession)
	Auth     []ZKID // the session's identities, for ACL checks and the "auth" ACL scheme
	Ops      []ZKOp
	Timeout  int32
	Sessions []int64
	Paths    []string
}

// ZKResultWriter is implemented by reply writers that want the result of ZooKeeper
// transactions; others get nothing for them.
type ZKResultWriter interface {
	ZKResult(r *ZKResult) // r is owned by the receiver
}

// ZKResult is the outcome of one ZKTxn.
type ZKResult struct {
	// Zxid is the txn's zxid: 0 for Touch and for a request of an unknown session; for
	// ExpireSessions and Reap, the last zxid they used (0 if they closed or deleted nothing).
	Zxid int64
	// Err is the reply header's error. For a multi it is 0 (per-op errors are in Ops)
	// unless the session is unknown (ZSessionExpired, and no Ops).
	Err     int32
	Ops     []ZKOpResult // ZKTxnOp: one; ZKTxnMulti: one per op
	Session ZKSession    // ZKTxnCreateSession
}

// ZKOpResult is the outcome of one op.
type ZKOpResult struct {
	Type int32 // the op's opcode, or ZKOpError in a failed multi
	Err  int32
	Path string // create*: the path created (with the sequence suffix)
	Stat ZKStat // create*, setData, setACL
}

// ZKSession is a session as the store keeps it.
type ZKSession struct {
	ID        int64
	Timeout   int32 // ms
	Passwd    [16]byte
	LastTouch int64 // unix ms of the last request (entry time)
}

// ZKEvent is a watch event, or ZKEventSessionClosed for a closed or expired session.
type ZKEvent struct {
	Type    int32
	Path    string
	Zxid    int64
	Session int64 // ZKEventSessionClosed only
}

// AppendZK appends one ZooKeeper transaction to a batch.
func AppendZK(dst []byte, t *ZKTxn) []byte {
	dst = append(dst, opZK, byte(t.Kind))
	dst = binary.AppendVarint(dst, t.Session)
	dst = binary.AppendUvarint(dst, uint64(len(t.Auth)))
	for _, id := range t.Auth {
		dst = appendBytes(dst, id.Scheme)
		dst = appendBytes(dst, id.ID)
	}
	dst = binary.AppendUvarint(dst, uint64(len(t.Ops)))
	for i := range t.Ops {
		op := &t.Ops[i]
		dst = binary.AppendVarint(dst, int64(op.Type))
		dst = appendBytes(dst, op.Path)
		dst = appendZKData(dst, op.Data)
		dst = binary.AppendUvarint(dst, uint64(len(op.ACL)))
		for _, a := range op.ACL {
			dst = binary.AppendVarint(dst, int64(a.Perms))
			dst = appendBytes(dst, a.Scheme)
			dst = appendBytes(dst, a.ID)
		}
		dst = binary.AppendVarint(dst, int64(op.Mode))
		dst = binary.AppendVarint(dst, int64(op.Version))
		dst = binary.AppendVarint(dst, op.TTL)
	}
	dst = binary.AppendVarint(dst, int64(t.Timeout))
	dst = binary.AppendUvarint(dst, uint64(len(t.Sessions)))
	for _, id := range t.Sessions {
		dst = binary.AppendVarint(dst, id)
	}
	dst = binary.AppendUvarint(dst, uint64(len(t.Paths)))
	for _, p := range t.Paths {
		dst = appendBytes(dst, p)
	}
	return dst
}

func (d *decoder) varint(lo, hi int64) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 || v < lo || v > hi {
		d.err = ErrCorrupt
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a number of elements, each of which takes at least one byte: a corrupt
// count cannot make the decoder allocate more than the batch holds.
func (d *decoder) count() int {
	n := d.uvarint(maxArgs)
	if d.err == nil && n > uint64(len(d.b)) {
		d.err = ErrCorrupt
	}
	return int(n)
}

func (d *decoder) int32() int32 { return int32(d.varint(math.MinInt32, math.MaxInt32)) }

// zkTxnInto decodes a ZKTxn into t, reusing its Ops array: the applier decodes every
// transaction into the same one (zkApplier). It reports whether it succeeded.
func (d *decoder) zkTxnInto(t *ZKTxn) bool {
	if len(d.b) == 0 {
		d.err = ErrCorrupt
		return false
	}
	*t = ZKTxn{Kind: ZKTxnKind(d.b[0]), Ops: t.Ops[:0]}
	d.b = d.b[1:]
	if t.Kind < ZKTxnOp || t.Kind > ZKTxnReap {
		d.err = ErrCorrupt
		return false
	}
	t.Session = d.varint(math.MinInt64, math.MaxInt64)
	if n := d.count(); n > 0 {
		t.Auth = make([]ZKID, n)
		for i := range t.Auth {
			t.Auth[i] = ZKID{Scheme: string(d.bytes()), ID: string(d.bytes())}
		}
	}
	if n := d.count(); n > 0 {
		t.Ops = slices.Grow(t.Ops, n)[:n]
		for i := range t.Ops {
			op := &t.Ops[i]
			*op = ZKOp{}
			op.Type = d.int32()
			op.Path = string(d.bytes())
			op.Data = zkData(d.bytes())
			if na := d.count(); na > 0 {
				op.ACL = make([]ZKACL, na)
				for j := range op.ACL {
					op.ACL[j] = ZKACL{Perms: d.int32(), Scheme: string(d.bytes()), ID: string(d.bytes())}
				}
			}
			op.Mode = d.int32()
			op.Version = d.int32()
			op.TTL = d.varint(math.MinInt64, math.MaxInt64)
		}
	}
	t.Timeout = d.int32()
	if n := d.count(); n > 0 {
		t.Sessions = make([]int64, n)
		for i := range t.Sessions {
			t.Sessions[i] = d.varint(math.MinInt64, math.MaxInt64)
		}
	}
	if n := d.count(); n > 0 {
		t.Paths = make([]string, n)
		for i := range t.Paths {
			t.Paths[i] = string(d.bytes())
		}
	}
	if d.err == nil && t.Kind == ZKTxnOp && len(t.Ops) != 1 {
		d.err = ErrCorrupt
	}
	return d.err == nil
}

// zkApply is the state of one transaction being applied.
type zkApply struct {
	t       *zkTree
	now     int64
	zxid    int64
	session int64
	auth    []ZKID
	events  []ZKEvent
	// undo, while applying a multi, holds what restores the tree if an op fails.
	undo    []func()
	logUndo bool
}

// zkApplier is what the applier reuses from one ZooKeeper transaction to the next: a
// setData allocated nine times as it was applied (the transaction, its op array, the
// apply state, the result, its op result, the events), on every member.
type zkApplier struct {
	txn ZKTxn
	a   zkApply
}

func (s *Store) applyZK(c *Ctx, d *decoder) {
	txn, a := &s.zkApplier.txn, &s.zkApplier.a
	// Keep the arrays, not the paths, data and auth they point to.
	defer func() {
		clear(txn.Ops)
		clear(a.events[:cap(a.events)]) // a failed multi truncates its events
		*a = zkApply{events: a.events[:0]}
	}()
	if !d.zkTxnInto(txn) {
		return
	}
	t := &s.zk
	t.mu.Lock()
	defer t.mu.Unlock()
	*a = zkApply{t: t, now: c.Now, session: txn.Session, auth: txn.Auth, events: a.events[:0]}
	// res goes to the writer, if any wants it; a single op's result is kept apart until
	// then, so that nothing is allocated for a member no client waits on.
	var res ZKResult
	var one ZKOpResult
	single := false
	switch txn.Kind {
	case ZKTxnOp, ZKTxnMulti:
		se := t.sessions[txn.Session]
		if se == nil {
			res.Err = ZSessionExpired
			if txn.Kind == ZKTxnOp {
				one, single = ZKOpResult{Type: txn.Ops[0].Type, Err: ZSessionExpired}, true
			}
			break
		}
		se.info.LastTouch = c.Now
		a.zxid = t.nextZxid()
		res.Zxid = a.zxid
		if txn.Kind == ZKTxnOp {
			one, single = a.do(&txn.Ops[0]), true
			res.Err = one.Err
		} else {
			res.Ops = a.multi(txn.Ops)
		}
	case ZKTxnCreateSession:
		res.Zxid = t.nextZxid()
		res.Session = t.createSession(c, txn.Timeout)
	case ZKTxnCloseSession:
		if t.sessions[txn.Session] != nil {
			a.zxid = t.nextZxid()
			res.Zxid = a.zxid
			a.closeSession(txn.Session)
		}
	case ZKTxnTouch:
		for _, id := range txn.Sessions {
			if se := t.sessions[id]; se != nil {
				se.info.LastTouch = c.Now
			}
		}
	case ZKTxnExpireSessions:
		for _, id := range txn.Sessions {
			if se := t.sessions[id]; se != nil && se.expired(c.Now) {
				a.zxid = t.nextZxid()
				res.Zxid = a.zxid
				a.closeSession(id)
			}
		}
	case ZKTxnReap:
		for _, p := range txn.Paths {
			if n := t.nodes[p]; n != nil && n.reapDue(c.Now) {
				a.zxid = t.nextZxid()
				res.Zxid = a.zxid
				a.removeNode(p, n)
			}
		}
	}
	if len(a.events) > 0 && t.watch != nil {
		t.watch(a.events)
	}
	if w, ok := c.W.(ZKResultWriter); ok {
		r := res
		if single {
			r.Ops = []ZKOpResult{one}
		}
		w.ZKResult(&r)
	}
}

func (t *zkTree) nextZxid() int64 {
	t.zxid++
	return t.zxid
}

// createSession starts a session. Ids start from the first creating entry's time as
// ZooKeeper's SessionTrackerImpl.initializeNextSessionId does for server id 0, so that
// they do not repeat across a cluster's restarts, and go up by one.
func (t *zkTree) createSession(c *Ctx, timeout int32) ZKSession {
	if t.nextSession == 0 {
		t.nextSession = int64(uint64(c.Now<<24) >> 8)
		if t.nextSession == 0 {
			t.nextSession = 1
		}
	}
	info := ZKSession{ID: t.nextSession, Timeout: timeout, LastTouch: c.Now}
	t.nextSession++
	binary.LittleEndian.PutUint64(info.Passwd[:8], c.rnd.next())
	binary.LittleEndian.PutUint64(info.Passwd[8:], c.rnd.next())
	t.sessions[info.ID] = &zkSession{info: info}
	return info
}

// closeSession deletes the session's ephemerals in path order, then the session.
func (a *zkApply) closeSession(id int64) {
	se := a.t.sessions[id]
	for _, p := range se.ephemerals.Keys() {
		a.removeNode(p, a.t.nodes[p])
	}
	delete(a.t.sessions, id)
	a.events = append(a.events, ZKEvent{Type: ZKEventSessionClosed, Zxid: a.zxid, Session: id})
}

// multi applies ops in order, each seeing the effects of those before it. If one fails,
// the tree is restored and every result becomes ZKOpError: 0 before the failing op, its
// error for it, ZRuntimeInconsistency after it.
func (a *zkApply) multi(ops []ZKOp) []ZKOpResult {
	res := make([]ZKOpResult, len(ops))
	a.logUndo = true
	defer func() { a.logUndo, a.undo = false, nil }()
	for i := range ops {
		res[i] = a.do(&ops[i])
		if res[i].Err == ZOK {
			continue
		}
		for j := len(a.undo) - 1; j >= 0; j-- {
			a.undo[j]()
		}
		a.events = a.events[:0]
		for j := range res {
			r := ZKOpResult{Type: ZKOpError}
			switch {
			case j == i:
				r.Err = res[i].Err
			case j > i:
				r.Err = ZRuntimeInconsistency
			}
			res[j] = r
		}
		break
	}
	return res
}

func (a *zkApply) do(op *ZKOp) ZKOpResult {
	var r ZKOpResult
	switch op.Type {
	case ZKOpCreate, ZKOpCreate2, ZKOpCreateContainer, ZKOpCreateTTL:
		r = a.create(op)
	case ZKOpDelete:
		r.Err = a.delete(op)
	case ZKOpSetData:
		r = a.setData(op)
	case ZKOpSetACL:
		r = a.setACL(op)
	case ZKOpCheck:
		r.Err = a.check(op)
	default:
		r.Err = ZUnimplemented
	}
	r.Type = op.Type
	return r
}

// create follows PrepRequestProcessor.pRequest2TxnCreate's order of checks. The opcode
// decides the kind of node (as the txn it makes does in DataTree); the mode decides
// whether it is sequential and ephemeral.
func (a *zkApply) create(op *ZKOp) ZKOpResult {
	fail := func(code int32) ZKOpResult { return ZKOpResult{Err: code} }
	mode := op.Mode
	if mode < ZKPersistent || mode > ZKPersistentSequentialWithTTL {
		return fail(ZBadArguments)
	}
	isTTL := mode == ZKPersistentWithTTL || mode == ZKPersistentSequentialWithTTL
	ttl := int64(-1)
	if op.Type == ZKOpCreateTTL {
		ttl = op.TTL
	}
	if isTTL != (op.Type == ZKOpCreateTTL) || isTTL && (ttl <= 0 || ttl > ZKMaxTTL) {
		return fail(ZBadArguments)
	}
	path := op.Path
	if !hasSlash(path) || bytes.IndexByte([]byte(path), 0) >= 0 {
		return fail(ZBadArguments)
	}
	parentPath, _ := splitZKPath(path)
	acl, ok := fixupACL(op.ACL, a.auth)
	if !ok {
		return fail(ZInvalidACL)
	}
	parent := a.t.nodes[parentPath]
	if parent == nil {
		return fail(ZNoNode)
	}
	if !ZKCheckPerm(parent.acl, ZKPermCreate, a.auth) {
		return fail(ZNoAuth)
	}
	if mode == ZKPersistentSequential || mode == ZKEphemeralSequential || mode == ZKPersistentSequentialWithTTL {
		path += fmt.Sprintf("%010d", parent.stat.Cversion)
	}
	if !ZKValidatePath(path) {
		return fail(ZBadArguments)
	}
	if a.t.nodes[path] != nil {
		return fail(ZNodeExists)
	}
	if ephemeralType(parent.stat.EphemeralOwner) == zkNormal {
		return fail(ZNoChildrenForEphemerals)
	}
	var owner int64
	switch {
	case op.Type == ZKOpCreateContainer:
		owner = zkContainerOwner
	case op.Type == ZKOpCreateTTL:
		owner = zkExtendedMask | ttl
	case mode == ZKEphemeral || mode == ZKEphemeralSequential:
		owner = a.session
	}
	n := &znode{data: op.Data, acl: acl, stat: ZKStat{
		Czxid: a.zxid, Mzxid: a.zxid, Pzxid: a.zxid, Ctime: a.now, Mtime: a.now, EphemeralOwner: owner,
	}}
	oldCversion, oldPzxid := parent.stat.Cversion, parent.stat.Pzxid
	parent.stat.Cversion++
	parent.stat.Pzxid = a.zxid
	a.t.put(path, n)
	if a.logUndo {
		a.undo = append(a.undo, func() {
			a.t.remove(path, n)
			parent.stat.Cversion, parent.stat.Pzxid = oldCversion, oldPzxid
		})
	}
	a.events = append(a.events, ZKEvent{Type: ZKEventNodeCreated, Path: path, Zxid: a.zxid},
		ZKEvent{Type: ZKEventNodeChildrenChanged, Path: parentPath, Zxid: a.zxid})
	return ZKOpResult{Path: path, Stat: n.clientStat()}
}

func hasSlash(path string) bool {
	for i := 0; i < len(path); i++ {
		if path[i] == '/' {
			return true
		}
	}
	return false
}

// delete follows the delete case of PrepRequestProcessor.pRequest2Txn: the path itself
// is only checked for a '/', a NUL and the paths ZooKeeper keeps for itself.
func (a *zkApply) delete(op *ZKOp) int32 {
	path := op.Path
	if !hasSlash(path) || bytes.IndexByte([]byte(path), 0) >= 0 || isSpecialZKPath(path) {
		return ZBadArguments
	}
	parentPath, _ := splitZKPath(path)
	parent := a.t.nodes[parentPath]
	if parent == nil {
		return ZNoNode
	}
	if !ZKCheckPerm(parent.acl, ZKPermDelete, a.auth) {
		return ZNoAuth
	}
	n := a.t.nodes[path]
	if n == nil {
		return ZNoNode
	}
	if op.Version != -1 && op.Version != n.stat.Version {
		return ZBadVersion
	}
	if n.children.Len() > 0 {
		return ZNotEmpty
	}
	a.removeNode(path, n)
	return ZOK
}

// removeNode deletes a childless node as DataTree.deleteNode does: the parent's pzxid
// moves, its cversion (the count of creates) does not.
func (a *zkApply) removeNode(path string, n *znode) {
	parentPath, _ := splitZKPath(path)
	parent := a.t.nodes[parentPath]
	oldPzxid := parent.stat.Pzxid
	a.t.remove(path, n)
	parent.stat.Pzxid = a.zxid
	if a.logUndo {
		a.undo = append(a.undo, func() {
			parent.stat.Pzxid = oldPzxid
			a.t.put(path, n)
		})
	}
	a.events = append(a.events, ZKEvent{Type: ZKEventNodeDeleted, Path: path, Zxid: a.zxid},
		ZKEvent{Type: ZKEventNodeChildrenChanged, Path: parentPath, Zxid: a.zxid})
}

func (a *zkApply) setData(op *ZKOp) ZKOpResult {
	if !ZKValidatePath(op.Path) {
		return ZKOpResult{Err: ZBadArguments}
	}
	n := a.t.nodes[op.Path]
	if n == nil {
		return ZKOpResult{Err: ZNoNode}
	}
	if !ZKCheckPerm(n.acl, ZKPermWrite, a.auth) {
		return ZKOpResult{Err: ZNoAuth}
	}
	if op.Version != -1 && op.Version != n.stat.Version {
		return ZKOpResult{Err: ZBadVersion}
	}
	old, oldStat := n.data, n.stat
	a.t.dataBytes += int64(len(op.Data) - len(n.data))
	n.data = op.Data
	n.stat.Version++
	n.stat.Mzxid = a.zxid
	n.stat.Mtime = a.now
	if a.logUndo {
		a.undo = append(a.undo, func() {
			a.t.dataBytes += int64(len(old) - len(n.data))
			n.data, n.stat = old, oldStat
		})
	}
	a.events = append(a.events, ZKEvent{Type: ZKEventNodeDataChanged, Path: op.Path, Zxid: a.zxid})
	return ZKOpResult{Stat: n.clientStat()}
}

func (a *zkApply) setACL(op *ZKOp) ZKOpResult {
	if !ZKValidatePath(op.Path) {
		return ZKOpResult{Err: ZBadArguments}
	}
	acl, ok := fixupACL(op.ACL, a.auth)
	if !ok {
		return ZKOpResult{Err: ZInvalidACL}
	}
	n := a.t.nodes[op.Path]
	if n == nil {
		return ZKOpResult{Err: ZNoNode}
	}
	if !ZKCheckPerm(n.acl, ZKPermAdmin, a.auth) {
		return ZKOpResult{Err: ZNoAuth}
	}
	if op.Version != -1 && op.Version != n.stat.Aversion {
		return ZKOpResult{Err: ZBadVersion}
	}
	old, oldStat := n.acl, n.stat
	n.acl = acl
	n.stat.Aversion++
	if a.logUndo {
		a.undo = append(a.undo, func() { n.acl, n.stat = old, oldStat })
	}
	return ZKOpResult{Stat: n.clientStat()}
}

// check needs READ permission, as in ZooKeeper.
func (a *zkApply) check(op *ZKOp) int32 {
	if !ZKValidatePath(op.Path) {
		return ZBadArguments
	}
	n := a.t.nodes[op.Path]
	if n == nil {
		return ZNoNode
	}
	if !ZKCheckPerm(n.acl, ZKPermRead, a.auth) {
		return ZNoAuth
	}
	if op.Version != -1 && op.Version != n.stat.Version {
		return ZBadVersion
	}
	return ZOK
}
