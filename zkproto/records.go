package zkproto

import (
	"fmt"

	"github.com/nanokv/nanokv/kvstore"
)

// The records of ZooKeeper 3.8's zookeeper.jute that cross the client port, field by field
// in the file's order, plus the hand-written ones (ConnectRequest's trailing readOnly byte,
// MultiOperationRecord, MultiResponse). Stat, Id and ACL are kvstore's ZKStat, ZKID and
// ZKACL. Decoding never looks past a record's last field: like Java, trailing bytes are
// ignored.

// Reserved xids: replies with these are not answers to a numbered request (ClientCnxn).
const (
	XidNotification int32 = -1 // a WatcherEvent; ZooKeeper sends it with zxid −1, err 0
	XidPing         int32 = -2
	XidAuth         int32 = -4 // the reply to an AuthPacket
	XidSetWatches   int32 = -8 // the reply to SetWatches/SetWatches2 sent on reconnect
)

// A Record is one jute record: it appends its encoding and decodes itself.
type Record interface {
	Append(dst []byte) []byte
	Decode(d *Decoder)
}

// DecodeRecord decodes r from payload.
func DecodeRecord(payload []byte, r Record) error {
	d := Decoder{b: payload}
	r.Decode(&d)
	return d.err
}

// AppendReply appends one reply frame: h, then body unless it is nil. ZooKeeper sends an
// error reply as the header alone.
func AppendReply(dst []byte, h ReplyHeader, body Record) []byte {
	return AppendFrame(dst, func(b []byte) []byte {
		b = h.Append(b)
		if body != nil {
			b = body.Append(b)
		}
		return b
	})
}

// AppendRequest appends one request frame (the client side): h, then body unless nil.
func AppendRequest(dst []byte, h RequestHeader, body Record) []byte {
	return AppendFrame(dst, func(b []byte) []byte {
		b = h.Append(b)
		if body != nil {
			b = body.Append(b)
		}
		return b
	})
}

// ParseReply decodes a reply payload (the client side): its header, then, if the header
// carries no error and body is not nil, the body.
func ParseReply(payload []byte, body Record) (ReplyHeader, error) {
	d := Decoder{b: payload}
	var h ReplyHeader
	h.Decode(&d)
	if d.err == nil && h.Err == kvstore.ZOK && body != nil {
		body.Decode(&d)
	}
	return h, d.err
}

// ---- session ----

// ConnectRequest opens or resumes a session; it is the first packet of a connection and
// has no RequestHeader. ReadOnly is not in zookeeper.jute: Java, C and kazoo clients append
// it after the record, go-zookeeper does not. ZooKeeper reads it if present
// (processConnectRequest) and answers with ConnectResponse.ReadOnly only then.
type ConnectRequest struct {
	ProtocolVersion int32
	LastZxidSeen    int64
	TimeOut         int32 // requested session timeout, ms
	SessionID       int64 // 0 for a new session
	Passwd          []byte
	ReadOnly        bool // the client accepts a read-only server
	HasReadOnly     bool // the readOnly byte was sent
}

func (r *ConnectRequest) Append(dst []byte) []byte {
	dst = AppendInt32(dst, r.ProtocolVersion)
	dst = AppendInt64(dst, r.LastZxidSeen)
	dst = AppendInt32(dst, r.TimeOut)
	dst = AppendInt64(dst, r.SessionID)
	dst = AppendBuffer(dst, r.Passwd)
	if r.HasReadOnly {
		dst = AppendBool(dst, r.ReadOnly)
	}
	return dst
}

func (r *ConnectRequest) Decode(d *Decoder) {
	r.ProtocolVersion = d.Int32()
	r.LastZxidSeen = d.Int64()
	r.TimeOut = d.Int32()
	r.SessionID = d.Int64()
	r.Passwd = d.Buffer()
	r.HasReadOnly = d.err == nil && d.Remaining() > 0
	r.ReadOnly = r.HasReadOnly && d.Bool()
}

// ParseConnectRequest decodes a connection's first payload.
func ParseConnectRequest(payload []byte) (ConnectRequest, error) {
	var r ConnectRequest
	err := DecodeRecord(payload, &r)
	return r, err
}

// ConnectResponse answers a ConnectRequest. For a session that cannot be resumed
// ZooKeeper sends TimeOut 0, SessionID 0 and 16 zero bytes of Passwd, then closes.
// ReadOnly (true when the server is read-only) goes out only if HasReadOnly, which the
// server copies from the request.
type ConnectResponse struct {
	ProtocolVersion int32
	TimeOut         int32 // negotiated session timeout, ms
	SessionID       int64
	Passwd          []byte
	ReadOnly        bool
	HasReadOnly     bool
}

func (r *ConnectResponse) Append(dst []byte) []byte {
	dst = AppendInt32(dst, r.ProtocolVersion)
	dst = AppendInt32(dst, r.TimeOut)
	dst = AppendInt64(dst, r.SessionID)
	dst = AppendBuffer(dst, r.Passwd)
	if r.HasReadOnly {
		dst = AppendBool(dst, r.ReadOnly)
	}
	return dst
}

func (r *ConnectResponse) Decode(d *Decoder) {
	r.ProtocolVersion = d.Int32()
	r.TimeOut = d.Int32()
	r.SessionID = d.Int64()
	r.Passwd = d.Buffer()
	r.HasReadOnly = d.err == nil && d.Remaining() > 0
	r.ReadOnly = r.HasReadOnly && d.Bool()
}

// ---- headers ----

// RequestHeader starts every request after the connect. Type is the opcode (ZKOp*).
type RequestHeader struct {
	Xid  int32
	Type int32
}

func (r *RequestHeader) Append(dst []byte) []byte {
	return AppendInt32(AppendInt32(dst, r.Xid), r.Type)
}

func (r *RequestHeader) Decode(d *Decoder) {
	r.Xid = d.Int32()
	r.Type = d.Int32()
}

// ReplyHeader starts every reply after the connect.
type ReplyHeader struct {
	Xid  int32
	Zxid int64
	Err  int32
}

func (r *ReplyHeader) Append(dst []byte) []byte {
	dst = AppendInt32(dst, r.Xid)
	dst = AppendInt64(dst, r.Zxid)
	return AppendInt32(dst, r.Err)
}

func (r *ReplyHeader) Decode(d *Decoder) {
	r.Xid = d.Int32()
	r.Zxid = d.Int64()
	r.Err = d.Int32()
}

// MultiHeader precedes every op of a multi request and every result of its reply; a
// header with Done ends the sequence.
type MultiHeader struct {
	Type int32
	Done bool
	Err  int32
}

func (r *MultiHeader) Append(dst []byte) []byte {
	dst = AppendInt32(dst, r.Type)
	dst = AppendBool(dst, r.Done)
	return AppendInt32(dst, r.Err)
}

func (r *MultiHeader) Decode(d *Decoder) {
	r.Type = d.Int32()
	r.Done = d.Bool()
	r.Err = d.Int32()
}

// multiEnd is the terminator ZooKeeper writes after a multi's ops and results
// ({-1, true, -1}); when reading, it stops at any header with Done set.
var multiEnd = MultiHeader{Type: -1, Done: true, Err: -1}

// ---- requests ----

// CreateRequest is the body of create, create2 and createContainer.
type CreateRequest struct {
	Path  string
	Data  []byte
	ACL   []kvstore.ZKACL
	Flags int32 // create mode (ZKPersistent, ZKEphemeral, ...)
}

func (r *CreateRequest) Append(dst []byte) []byte {
	dst = AppendString(dst, r.Path)
	dst = AppendBuffer(dst, r.Data)
	dst = AppendACLs(dst, r.ACL)
	return AppendInt32(dst, r.Flags)
}

func (r *CreateRequest) Decode(d *Decoder) {
	r.Path = d.UString()
	r.Data = d.Buffer()
	r.ACL = d.ACLs()
	r.Flags = d.Int32()
}

// CreateTTLRequest is the body of createTTL.
type CreateTTLRequest struct {
	Path  string
	Data  []byte
	ACL   []kvstore.ZKACL
	Flags int32
	TTL   int64 // ms
}

func (r *CreateTTLRequest) Append(dst []byte) []byte {
	dst = AppendString(dst, r.Path)
	dst = AppendBuffer(dst, r.Data)
	dst = AppendACLs(dst, r.ACL)
	dst = AppendInt32(dst, r.Flags)
	return AppendInt64(dst, r.TTL)
}

func (r *CreateTTLRequest) Decode(d *Decoder) {
	r.Path = d.UString()
	r.Data = d.Buffer()
	r.ACL = d.ACLs()
	r.Flags = d.Int32()
	r.TTL = d.Int64()
}

// DeleteRequest is the body of delete. Version −1 matches any version.
type DeleteRequest struct {
	Path    string
	Version int32
}

func (r *DeleteRequest) Append(dst []byte) []byte {
	return AppendInt32(AppendString(dst, r.Path), r.Version)
}

func (r *DeleteRequest) Decode(d *Decoder) {
	r.Path = d.UString()
	r.Version = d.Int32()
}

// ExistsRequest is the body of exists.
type ExistsRequest struct {
	Path  string
	Watch bool
}

func (r *ExistsRequest) Append(dst []byte) []byte {
	return AppendBool(AppendString(dst, r.Path), r.Watch)
}
func (r *ExistsRequest) Decode(d *Decoder) { r.Path, r.Watch = d.UString(), d.Bool() }

// GetDataRequest is the body of getData (and of a getData op in multiRead).
type GetDataRequest struct {
	Path  string
	Watch bool
}

func (r *GetDataRequest) Append(dst []byte) []byte {
	return AppendBool(AppendString(dst, r.Path), r.Watch)
}
func (r *GetDataRequest) Decode(d *Decoder) { r.Path, r.Watch = d.UString(), d.Bool() }

// GetChildrenRequest is the body of getChildren (and of a getChildren op in multiRead).
type GetChildrenRequest struct {
	Path  string
	Watch bool
}

func (r *GetChildrenRequest) Append(dst []byte) []byte {
	return AppendBool(AppendString(dst, r.Path), r.Watch)
}
func (r *GetChildrenRequest) Decode(d *Decoder) { r.Path, r.Watch = d.UString(), d.Bool() }

// GetChildren2Request is the body of getChildren2 (children and the parent's Stat).
type GetChildren2Request struct {
	Path  string
	Watch bool
}

func (r *GetChildren2Request) Append(dst []byte) []byte {
	return AppendBool(AppendString(dst, r.Path), r.Watch)
}
func (r *GetChildren2Request) Decode(d *Decoder) { r.Path, r.Watch = d.UString(), d.Bool() }

// SetDataRequest is the body of setData. Version −1 matches any version.
type SetDataRequest struct {
	Path    string
	Data    []byte
	Version int32
}

func (r *SetDataRequest) Append(dst []byte) []byte {
	dst = AppendString(dst, r.Path)
	dst = AppendBuffer(dst, r.Data)
	return AppendInt32(dst, r.Version)
}

func (r *SetDataRequest) Decode(d *Decoder) {
	r.Path = d.UString()
	r.Data = d.Buffer()
	r.Version = d.Int32()
}

// GetACLRequest is the body of getACL.
type GetACLRequest struct{ Path string }

func (r *GetACLRequest) Append(dst []byte) []byte { return AppendString(dst, r.Path) }
func (r *GetACLRequest) Decode(d *Decoder)        { r.Path = d.UString() }

// SetACLRequest is the body of setACL. Version is the expected aversion, −1 for any.
type SetACLRequest struct {
	Path    string
	ACL     []kvstore.ZKACL
	Version int32
}

func (r *SetACLRequest) Append(dst []byte) []byte {
	dst = AppendString(dst, r.Path)
	dst = AppendACLs(dst, r.ACL)
	return AppendInt32(dst, r.Version)
}

func (r *SetACLRequest) Decode(d *Decoder) {
	r.Path = d.UString()
	r.ACL = d.ACLs()
	r.Version = d.Int32()
}

// SyncRequest is the body of sync.
type SyncRequest struct{ Path string }

func (r *SyncRequest) Append(dst []byte) []byte { return AppendString(dst, r.Path) }
func (r *SyncRequest) Decode(d *Decoder)        { r.Path = d.UString() }

// CheckVersionRequest is the body of check (alone or as a multi op).
type CheckVersionRequest struct {
	Path    string
	Version int32
}

func (r *CheckVersionRequest) Append(dst []byte) []byte {
	return AppendInt32(AppendString(dst, r.Path), r.Version)
}

func (r *CheckVersionRequest) Decode(d *Decoder) {
	r.Path = d.UString()
	r.Version = d.Int32()
}

// ReconfigRequest is the body of reconfig; its reply is a GetDataResponse (the new config).
type ReconfigRequest struct {
	JoiningServers string
	LeavingServers string
	NewMembers     string
	CurConfigID    int64 // −1: do not check the current config's version
}

func (r *ReconfigRequest) Append(dst []byte) []byte {
	dst = AppendString(dst, r.JoiningServers)
	dst = AppendString(dst, r.LeavingServers)
	dst = AppendString(dst, r.NewMembers)
	return AppendInt64(dst, r.CurConfigID)
}

func (r *ReconfigRequest) Decode(d *Decoder) {
	r.JoiningServers = d.UString()
	r.LeavingServers = d.UString()
	r.NewMembers = d.UString()
	r.CurConfigID = d.Int64()
}

// CheckWatchesRequest is the body of checkWatches. Type is a WatcherType: 1 children,
// 2 data, 3 any. The reply is the header alone (ZNoWatcher if none).
type CheckWatchesRequest struct {
	Path string
	Type int32
}

func (r *CheckWatchesRequest) Append(dst []byte) []byte {
	return AppendInt32(AppendString(dst, r.Path), r.Type)
}

func (r *CheckWatchesRequest) Decode(d *Decoder) {
	r.Path = d.UString()
	r.Type = d.Int32()
}

// RemoveWatchesRequest is the body of removeWatches (Type as in CheckWatchesRequest).
type RemoveWatchesRequest struct {
	Path string
	Type int32
}

func (r *RemoveWatchesRequest) Append(dst []byte) []byte {
	return AppendInt32(AppendString(dst, r.Path), r.Type)
}

func (r *RemoveWatchesRequest) Decode(d *Decoder) {
	r.Path = d.UString()
	r.Type = d.Int32()
}

// SetWatches re-registers a reconnecting client's watches (xid XidSetWatches). The reply
// is the header alone; events missed since RelativeZxid follow as notifications.
type SetWatches struct {
	RelativeZxid int64
	DataWatches  []string
	ExistWatches []string
	ChildWatches []string
}

func (r *SetWatches) Append(dst []byte) []byte {
	dst = AppendInt64(dst, r.RelativeZxid)
	dst = AppendStrings(dst, r.DataWatches)
	dst = AppendStrings(dst, r.ExistWatches)
	return AppendStrings(dst, r.ChildWatches)
}

func (r *SetWatches) Decode(d *Decoder) {
	r.RelativeZxid = d.Int64()
	r.DataWatches = d.Strings()
	r.ExistWatches = d.Strings()
	r.ChildWatches = d.Strings()
}

// SetWatches2 is SetWatches with the persistent watches of addWatch (opcode setWatches2).
type SetWatches2 struct {
	RelativeZxid               int64
	DataWatches                []string
	ExistWatches               []string
	ChildWatches               []string
	PersistentWatches          []string
	PersistentRecursiveWatches []string
}

func (r *SetWatches2) Append(dst []byte) []byte {
	dst = AppendInt64(dst, r.RelativeZxid)
	dst = AppendStrings(dst, r.DataWatches)
	dst = AppendStrings(dst, r.ExistWatches)
	dst = AppendStrings(dst, r.ChildWatches)
	dst = AppendStrings(dst, r.PersistentWatches)
	return AppendStrings(dst, r.PersistentRecursiveWatches)
}

func (r *SetWatches2) Decode(d *Decoder) {
	r.RelativeZxid = d.Int64()
	r.DataWatches = d.Strings()
	r.ExistWatches = d.Strings()
	r.ChildWatches = d.Strings()
	r.PersistentWatches = d.Strings()
	r.PersistentRecursiveWatches = d.Strings()
}

// AuthPacket is the body of auth (xid XidAuth): addAuthInfo(scheme, auth). ZooKeeper
// replies with the header alone, ZOK or ZAuthFailed (and then closes the connection).
type AuthPacket struct {
	Type   int32 // always 0
	Scheme string
	Auth   []byte
}

func (r *AuthPacket) Append(dst []byte) []byte {
	dst = AppendInt32(dst, r.Type)
	dst = AppendString(dst, r.Scheme)
	return AppendBuffer(dst, r.Auth)
}

func (r *AuthPacket) Decode(d *Decoder) {
	r.Type = d.Int32()
	r.Scheme = d.UString()
	r.Auth = d.Buffer()
}

// SASLRequest is the body of sasl (GetSASLRequest); the reply is a SetSASLResponse.
type SASLRequest struct{ Token []byte }

func (r *SASLRequest) Append(dst []byte) []byte { return AppendBuffer(dst, r.Token) }
func (r *SASLRequest) Decode(d *Decoder)        { r.Token = d.Buffer() }

// SetSASLResponse answers a SASLRequest.
type SetSASLResponse struct{ Token []byte }

func (r *SetSASLResponse) Append(dst []byte) []byte { return AppendBuffer(dst, r.Token) }
func (r *SetSASLResponse) Decode(d *Decoder)        { r.Token = d.Buffer() }

// AddWatchRequest is the body of addWatch. Mode: 0 persistent, 1 persistent recursive.
// ZooKeeper answers it with an ErrorResponse{0} body after the header.
type AddWatchRequest struct {
	Path string
	Mode int32
}

func (r *AddWatchRequest) Append(dst []byte) []byte {
	return AppendInt32(AppendString(dst, r.Path), r.Mode)
}

func (r *AddWatchRequest) Decode(d *Decoder) {
	r.Path = d.UString()
	r.Mode = d.Int32()
}

// GetEphemeralsRequest is the body of getEphemerals: the session's ephemerals under
// PrefixPath ("" or "/" for all).
type GetEphemeralsRequest struct{ PrefixPath string }

func (r *GetEphemeralsRequest) Append(dst []byte) []byte { return AppendString(dst, r.PrefixPath) }
func (r *GetEphemeralsRequest) Decode(d *Decoder)        { r.PrefixPath = d.UString() }

// GetAllChildrenNumberRequest is the body of getAllChildrenNumber.
type GetAllChildrenNumberRequest struct{ Path string }

func (r *GetAllChildrenNumberRequest) Append(dst []byte) []byte { return AppendString(dst, r.Path) }
func (r *GetAllChildrenNumberRequest) Decode(d *Decoder)        { r.Path = d.UString() }

// MultiOp is one op of a multi or multiRead request.
type MultiOp struct {
	// Type is the op's opcode as its MultiHeader gave it. Note that ZooKeeper turns a
	// create2 op into a plain create (Op.create), so its result is a create's (path only);
	// createContainer and createTTL results are create2's (path and Stat).
	Type int32
	// Body is *CreateRequest (create, create2, createContainer), *CreateTTLRequest,
	// *DeleteRequest, *SetDataRequest, *CheckVersionRequest (multi), or *GetDataRequest,
	// *GetChildrenRequest (multiRead).
	Body Record
}

// MultiRequest is the body of multi and multiRead (MultiOperationRecord): per op a
// MultiHeader{Type, false, −1} and the op's request, then MultiHeader{−1, true, −1}.
type MultiRequest struct {
	Ops []MultiOp
}

func (r *MultiRequest) Append(dst []byte) []byte {
	for _, op := range r.Ops {
		h := MultiHeader{Type: op.Type, Err: -1}
		dst = h.Append(dst)
		dst = op.Body.Append(dst)
	}
	return multiEnd.Append(dst)
}

var (
	errMultiOp    = fmt.Errorf("%w: invalid type of op in multi", ErrMalformed)
	errMultiMixed = fmt.Errorf("%w: multi mixes read and write ops", ErrMalformed)
)

// Decode reads ops until a header with Done. Like MultiOperationRecord, it refuses an op
// type it does not know and a mix of read and write ops.
func (r *MultiRequest) Decode(d *Decoder) {
	r.Ops = nil
	var kind opKind
	for {
		var h MultiHeader
		h.Decode(d)
		if d.err != nil || h.Done {
			return
		}
		body, k := newMultiOpBody(h.Type)
		if body == nil {
			d.fail(errMultiOp)
			return
		}
		if kind != 0 && k != kind {
			d.fail(errMultiMixed)
			return
		}
		kind = k
		body.Decode(d)
		if d.err != nil {
			return
		}
		r.Ops = append(r.Ops, MultiOp{Type: h.Type, Body: body})
	}
}

type opKind uint8

const (
	opWrite opKind = 1
	opRead  opKind = 2
)

func newMultiOpBody(op int32) (Record, opKind) {
	switch op {
	case kvstore.ZKOpCreate, kvstore.ZKOpCreate2, kvstore.ZKOpCreateContainer:
		return new(CreateRequest), opWrite
	case kvstore.ZKOpCreateTTL:
		return new(CreateTTLRequest), opWrite
	case kvstore.ZKOpDelete:
		return new(DeleteRequest), opWrite
	case kvstore.ZKOpSetData:
		return new(SetDataRequest), opWrite
	case kvstore.ZKOpCheck:
		return new(CheckVersionRequest), opWrite
	case kvstore.ZKOpGetData:
		return new(GetDataRequest), opRead
	case kvstore.ZKOpGetChildren:
		return new(GetChildrenRequest), opRead
	}
	return nil, 0
}

// ---- replies ----

// ErrorResponse is the body of an error result in a MultiResponse, and the body ZooKeeper
// sends after a successful addWatch (Err 0).
type ErrorResponse struct{ Err int32 }

func (r *ErrorResponse) Append(dst []byte) []byte { return AppendInt32(dst, r.Err) }
func (r *ErrorResponse) Decode(d *Decoder)        { r.Err = d.Int32() }

// CreateResponse answers create.
type CreateResponse struct{ Path string }

func (r *CreateResponse) Append(dst []byte) []byte { return AppendString(dst, r.Path) }
func (r *CreateResponse) Decode(d *Decoder)        { r.Path = d.UString() }

// Create2Response answers create2, createContainer and createTTL.
type Create2Response struct {
	Path string
	Stat kvstore.ZKStat
}

func (r *Create2Response) Append(dst []byte) []byte {
	return AppendStat(AppendString(dst, r.Path), &r.Stat)
}

func (r *Create2Response) Decode(d *Decoder) {
	r.Path = d.UString()
	r.Stat = d.Stat()
}

// StatResponse is the body of ExistsResponse, SetDataResponse and SetACLResponse, which
// are all one Stat.
type StatResponse struct{ Stat kvstore.ZKStat }

func (r *StatResponse) Append(dst []byte) []byte { return AppendStat(dst, &r.Stat) }
func (r *StatResponse) Decode(d *Decoder)        { r.Stat = d.Stat() }

// ExistsResponse answers exists (a missing node is a ZNoNode header, no body).
type ExistsResponse = StatResponse

// SetDataResponse answers setData.
type SetDataResponse = StatResponse

// SetACLResponse answers setACL.
type SetACLResponse = StatResponse

// GetDataResponse answers getData and reconfig.
type GetDataResponse struct {
	Data []byte
	Stat kvstore.ZKStat
}

func (r *GetDataResponse) Append(dst []byte) []byte {
	return AppendStat(AppendBuffer(dst, r.Data), &r.Stat)
}

func (r *GetDataResponse) Decode(d *Decoder) {
	r.Data = d.Buffer()
	r.Stat = d.Stat()
}

// GetACLResponse answers getACL.
type GetACLResponse struct {
	ACL  []kvstore.ZKACL
	Stat kvstore.ZKStat
}

func (r *GetACLResponse) Append(dst []byte) []byte {
	return AppendStat(AppendACLs(dst, r.ACL), &r.Stat)
}

func (r *GetACLResponse) Decode(d *Decoder) {
	r.ACL = d.ACLs()
	r.Stat = d.Stat()
}

// GetChildrenResponse answers getChildren.
type GetChildrenResponse struct{ Children []string }

func (r *GetChildrenResponse) Append(dst []byte) []byte { return AppendStrings(dst, r.Children) }
func (r *GetChildrenResponse) Decode(d *Decoder)        { r.Children = d.Strings() }

// GetChildren2Response answers getChildren2.
type GetChildren2Response struct {
	Children []string
	Stat     kvstore.ZKStat
}

func (r *GetChildren2Response) Append(dst []byte) []byte {
	return AppendStat(AppendStrings(dst, r.Children), &r.Stat)
}

func (r *GetChildren2Response) Decode(d *Decoder) {
	r.Children = d.Strings()
	r.Stat = d.Stat()
}

// SyncResponse answers sync with the request's path.
type SyncResponse struct{ Path string }

func (r *SyncResponse) Append(dst []byte) []byte { return AppendString(dst, r.Path) }
func (r *SyncResponse) Decode(d *Decoder)        { r.Path = d.UString() }

// WatcherEvent is a watch notification, sent with ReplyHeader{XidNotification, −1, 0}.
type WatcherEvent struct {
	Type  int32 // ZKEvent*
	State int32 // 3 SyncConnected
	Path  string
}

func (r *WatcherEvent) Append(dst []byte) []byte {
	dst = AppendInt32(dst, r.Type)
	dst = AppendInt32(dst, r.State)
	return AppendString(dst, r.Path)
}

func (r *WatcherEvent) Decode(d *Decoder) {
	r.Type = d.Int32()
	r.State = d.Int32()
	r.Path = d.UString()
}

// GetEphemeralsResponse answers getEphemerals.
type GetEphemeralsResponse struct{ Ephemerals []string }

func (r *GetEphemeralsResponse) Append(dst []byte) []byte { return AppendStrings(dst, r.Ephemerals) }
func (r *GetEphemeralsResponse) Decode(d *Decoder)        { r.Ephemerals = d.Strings() }

// GetAllChildrenNumberResponse answers getAllChildrenNumber.
type GetAllChildrenNumberResponse struct{ TotalNumber int32 }

func (r *GetAllChildrenNumberResponse) Append(dst []byte) []byte {
	return AppendInt32(dst, r.TotalNumber)
}
func (r *GetAllChildrenNumberResponse) Decode(d *Decoder) { r.TotalNumber = d.Int32() }

// ClientInfo is one identity of a session, as whoAmI reports it.
type ClientInfo struct {
	AuthScheme string
	User       string
}

// WhoAmIResponse answers whoAmI.
type WhoAmIResponse struct{ ClientInfo []ClientInfo }

func (r *WhoAmIResponse) Append(dst []byte) []byte {
	if r.ClientInfo == nil {
		return AppendInt32(dst, -1)
	}
	dst = AppendInt32(dst, int32(len(r.ClientInfo)))
	for _, c := range r.ClientInfo {
		dst = AppendString(AppendString(dst, c.AuthScheme), c.User)
	}
	return dst
}

func (r *WhoAmIResponse) Decode(d *Decoder) {
	r.ClientInfo = nil
	n, isNil := d.VectorLen(8)
	if isNil || d.err != nil {
		return
	}
	out := make([]ClientInfo, n)
	for i := range out {
		out[i] = ClientInfo{AuthScheme: d.UString(), User: d.UString()}
	}
	if d.err == nil {
		r.ClientInfo = out
	}
}

// MultiResult is one result of a multi or multiRead.
type MultiResult struct {
	// Type is ZKOpCreate (Path), ZKOpCreate2 (Path, Stat), ZKOpDelete, ZKOpCheck,
	// ZKOpSetData (Stat), ZKOpGetData (Data, Stat), ZKOpGetChildren (Children) or
	// ZKOpError (Err). Append writes ZKOpCreateContainer and ZKOpCreateTTL as ZKOpCreate2
	// and ZKOpDeleteContainer as ZKOpDelete, as ZooKeeper does.
	Type int32
	// Err is an error result's code. In a failed multi every result is an error: ZOK for
	// the ops before the one that failed, its code for it, ZRuntimeInconsistency after.
	Err      int32
	Path     string
	Stat     kvstore.ZKStat
	Data     []byte
	Children []string
}

// MultiResponse answers multi and multiRead: per result a MultiHeader{Type, false, Err}
// (Err is 0 but for an error result) and the result's record, then MultiHeader{−1, true,
// −1}. A failed multi still has ZOK in its ReplyHeader: the errors are in the results.
type MultiResponse struct {
	Results []MultiResult
}

func (r *MultiResponse) Append(dst []byte) []byte {
	for i := range r.Results {
		res := &r.Results[i]
		h := MultiHeader{Type: res.Type}
		switch res.Type {
		case kvstore.ZKOpCreateContainer, kvstore.ZKOpCreateTTL:
			h.Type = kvstore.ZKOpCreate2
		case kvstore.ZKOpDeleteContainer:
			h.Type = kvstore.ZKOpDelete
		case kvstore.ZKOpError:
			h.Err = res.Err
		}
		dst = h.Append(dst)
		switch h.Type {
		case kvstore.ZKOpCreate:
			dst = AppendString(dst, res.Path)
		case kvstore.ZKOpCreate2:
			dst = AppendStat(AppendString(dst, res.Path), &res.Stat)
		case kvstore.ZKOpDelete, kvstore.ZKOpCheck:
		case kvstore.ZKOpSetData:
			dst = AppendStat(dst, &res.Stat)
		case kvstore.ZKOpGetData:
			dst = AppendStat(AppendBuffer(dst, res.Data), &res.Stat)
		case kvstore.ZKOpGetChildren:
			dst = AppendStrings(dst, res.Children)
		case kvstore.ZKOpError:
			dst = AppendInt32(dst, res.Err)
		default:
			panic(fmt.Sprintf("zkproto: multi result %d has type %d, which ZooKeeper cannot send", i, res.Type))
		}
	}
	return multiEnd.Append(dst)
}

var errMultiResult = fmt.Errorf("%w: invalid type of result in multi response", ErrMalformed)

func (r *MultiResponse) Decode(d *Decoder) {
	r.Results = nil
	for {
		var h MultiHeader
		h.Decode(d)
		if d.err != nil || h.Done {
			return
		}
		res := MultiResult{Type: h.Type}
		switch h.Type {
		case kvstore.ZKOpCreate:
			res.Path = d.UString()
		case kvstore.ZKOpCreate2:
			res.Path = d.UString()
			res.Stat = d.Stat()
		case kvstore.ZKOpDelete, kvstore.ZKOpCheck:
		case kvstore.ZKOpSetData:
			res.Stat = d.Stat()
		case kvstore.ZKOpGetData:
			res.Data = d.Buffer()
			res.Stat = d.Stat()
		case kvstore.ZKOpGetChildren:
			res.Children = d.Strings()
		case kvstore.ZKOpError:
			res.Err = d.Int32()
		default:
			d.fail(errMultiResult)
		}
		if d.err != nil {
			return
		}
		r.Results = append(r.Results, res)
	}
}

// ---- the request dispatcher ----

// Request is one decoded request after the connect.
type Request struct {
	Header RequestHeader
	// Body is a pointer to the opcode's record (see NewRequestBody); nil for ping,
	// closeSession and whoAmI, which have none.
	Body Record
}

// RequestError is a request whose header was read but which ParseRequest refused; it
// says what ZooKeeper 3.8 does about it.
type RequestError struct {
	Header RequestHeader
	// Code is the error ZooKeeper replies with (ReplyHeader{Header.Xid, lastZxid, Code},
	// no body): ZUnimplemented for an unknown opcode (UnimplementedRequestProcessor),
	// ZMarshallingError for a body it cannot decode. 0: no reply.
	Code int32
	// Close: ZooKeeper then closes the connection (after an unknown opcode; at once,
	// without a reply, for an undecodable auth or sasl packet).
	Close bool
	// Err is ErrUnknownOp or the decoding error (wrapping ErrMalformed).
	Err error
}

func (e *RequestError) Error() string {
	return fmt.Sprintf("zkproto: request xid %d type %d: %v", e.Header.Xid, e.Header.Type, e.Err)
}

func (e *RequestError) Unwrap() error { return e.Err }

// NewRequestBody returns a new, empty record for opcode op's request body; known is false
// for an opcode clients may not send (ZooKeeper's Request.isValid, less createSession and
// deleteContainer, which only the server itself issues), and body is nil for the known
// opcodes without a body.
func NewRequestBody(op int32) (body Record, known bool) {
	switch op {
	case kvstore.ZKOpCreate, kvstore.ZKOpCreate2, kvstore.ZKOpCreateContainer:
		return new(CreateRequest), true
	case kvstore.ZKOpCreateTTL:
		return new(CreateTTLRequest), true
	case kvstore.ZKOpDelete:
		return new(DeleteRequest), true
	case kvstore.ZKOpExists:
		return new(ExistsRequest), true
	case kvstore.ZKOpGetData:
		return new(GetDataRequest), true
	case kvstore.ZKOpSetData:
		return new(SetDataRequest), true
	case kvstore.ZKOpGetACL:
		return new(GetACLRequest), true
	case kvstore.ZKOpSetACL:
		return new(SetACLRequest), true
	case kvstore.ZKOpGetChildren:
		return new(GetChildrenRequest), true
	case kvstore.ZKOpSync:
		return new(SyncRequest), true
	case kvstore.ZKOpGetChildren2:
		return new(GetChildren2Request), true
	case kvstore.ZKOpCheck:
		return new(CheckVersionRequest), true
	case kvstore.ZKOpMulti, kvstore.ZKOpMultiRead:
		return new(MultiRequest), true
	case kvstore.ZKOpReconfig:
		return new(ReconfigRequest), true
	case kvstore.ZKOpCheckWatches:
		return new(CheckWatchesRequest), true
	case kvstore.ZKOpRemoveWatches:
		return new(RemoveWatchesRequest), true
	case kvstore.ZKOpAuth:
		return new(AuthPacket), true
	case kvstore.ZKOpSetWatches:
		return new(SetWatches), true
	case kvstore.ZKOpSASL:
		return new(SASLRequest), true
	case kvstore.ZKOpGetEphemerals:
		return new(GetEphemeralsRequest), true
	case kvstore.ZKOpGetAllChildrenNumber:
		return new(GetAllChildrenNumberRequest), true
	case kvstore.ZKOpSetWatches2:
		return new(SetWatches2), true
	case kvstore.ZKOpAddWatch:
		return new(AddWatchRequest), true
	case kvstore.ZKOpPing, kvstore.ZKOpCloseSession, kvstore.ZKOpWhoAmI:
		return nil, true
	}
	return nil, false
}

var errMultiKind = fmt.Errorf("%w: op kind does not match multi or multiRead", ErrMalformed)

// ParseRequest decodes a request payload (the frame after the connect): its header and
// the opcode's body. maxBuffer ≤ 0 means DefaultMaxBuffer.
//
// A payload too short for the header gives an error wrapping ErrMalformed: ZooKeeper
// closes the connection. A refused request with a readable header gives the header in
// Request and a *RequestError saying how ZooKeeper answers it.
func ParseRequest(payload []byte, maxBuffer int) (Request, error) {
	if maxBuffer <= 0 {
		maxBuffer = DefaultMaxBuffer
	}
	if len(payload) > maxBuffer {
		return Request{}, ErrTooLarge
	}
	d := Decoder{b: payload}
	var req Request
	req.Header.Decode(&d)
	if d.err != nil {
		return Request{}, fmt.Errorf("zkproto: request header: %w", d.err)
	}
	op := req.Header.Type
	body, known := NewRequestBody(op)
	if !known {
		return req, &RequestError{Header: req.Header, Code: kvstore.ZUnimplemented, Close: true, Err: ErrUnknownOp}
	}
	if body == nil {
		return req, nil
	}
	body.Decode(&d)
	if m, ok := body.(*MultiRequest); ok && d.err == nil {
		want := opWrite
		if op == kvstore.ZKOpMultiRead {
			want = opRead
		}
		for _, o := range m.Ops {
			if _, k := newMultiOpBody(o.Type); k != want {
				d.fail(errMultiKind)
				break
			}
		}
	}
	if d.err != nil {
		e := &RequestError{Header: req.Header, Code: kvstore.ZMarshallingError, Err: d.err}
		if op == kvstore.ZKOpAuth || op == kvstore.ZKOpSASL {
			// NIOServerCnxn/ZooKeeperServer.processPacket decodes these itself; an
			// IOException there closes the connection.
			e.Code, e.Close = 0, true
		}
		return req, e
	}
	req.Body = body
	return req, nil
}
