package kvstore

// The ZooKeeper data model as the store keeps it and as the zkproto frontend speaks it.
// These are the shared vocabulary of kvstore (which applies ZooKeeper transactions
// deterministically, zk.go) and zkproto (which decodes the jute wire format into them and
// renders results back): the numbers are ZooKeeper 3.8's own, so they go on the wire as
// they are.

// ZooKeeper opcodes (ZooDefs.OpCode).
const (
	ZKOpNotification         int32 = 0
	ZKOpCreate               int32 = 1
	ZKOpDelete               int32 = 2
	ZKOpExists               int32 = 3
	ZKOpGetData              int32 = 4
	ZKOpSetData              int32 = 5
	ZKOpGetACL               int32 = 6
	ZKOpSetACL               int32 = 7
	ZKOpGetChildren          int32 = 8
	ZKOpSync                 int32 = 9
	ZKOpPing                 int32 = 11
	ZKOpGetChildren2         int32 = 12
	ZKOpCheck                int32 = 13
	ZKOpMulti                int32 = 14
	ZKOpCreate2              int32 = 15
	ZKOpReconfig             int32 = 16
	ZKOpCheckWatches         int32 = 17
	ZKOpRemoveWatches        int32 = 18
	ZKOpCreateContainer      int32 = 19
	ZKOpDeleteContainer      int32 = 20
	ZKOpCreateTTL            int32 = 21
	ZKOpMultiRead            int32 = 22
	ZKOpAuth                 int32 = 100
	ZKOpSetWatches           int32 = 101
	ZKOpSASL                 int32 = 102
	ZKOpGetEphemerals        int32 = 103
	ZKOpGetAllChildrenNumber int32 = 104
	ZKOpSetWatches2          int32 = 105
	ZKOpAddWatch             int32 = 106
	ZKOpWhoAmI               int32 = 107
	ZKOpCreateSession        int32 = -10
	ZKOpCloseSession         int32 = -11
	ZKOpError                int32 = -1
)

// ZooKeeper error codes (KeeperException.Code).
const (
	ZOK                       int32 = 0
	ZSystemError              int32 = -1
	ZRuntimeInconsistency     int32 = -2
	ZDataInconsistency        int32 = -3
	ZConnectionLoss           int32 = -4
	ZMarshallingError         int32 = -5
	ZUnimplemented            int32 = -6
	ZOperationTimeout         int32 = -7
	ZBadArguments             int32 = -8
	ZNewConfigNoQuorum        int32 = -13
	ZReconfigInProgress       int32 = -14
	ZAPIError                 int32 = -100
	ZNoNode                   int32 = -101
	ZNoAuth                   int32 = -102
	ZBadVersion               int32 = -103
	ZNoChildrenForEphemerals  int32 = -108
	ZNodeExists               int32 = -110
	ZNotEmpty                 int32 = -111
	ZSessionExpired           int32 = -112
	ZInvalidCallback          int32 = -113
	ZInvalidACL               int32 = -114
	ZAuthFailed               int32 = -115
	ZSessionMoved             int32 = -118
	ZNotReadOnly              int32 = -119
	ZEphemeralOnLocalSession  int32 = -120
	ZNoWatcher                int32 = -121
	ZRequestTimeout           int32 = -122
	ZReconfigDisabled         int32 = -123
	ZSessionClosedRequireSASL int32 = -124
	ZQuotaExceeded            int32 = -125
	ZThrottledOp              int32 = -127
)

// ACL permission bits (ZooDefs.Perms).
const (
	ZKPermRead   int32 = 1 << 0
	ZKPermWrite  int32 = 1 << 1
	ZKPermCreate int32 = 1 << 2
	ZKPermDelete int32 = 1 << 3
	ZKPermAdmin  int32 = 1 << 4
	ZKPermAll    int32 = ZKPermRead | ZKPermWrite | ZKPermCreate | ZKPermDelete | ZKPermAdmin
)

// Create modes (CreateMode.toFlag).
const (
	ZKPersistent                  int32 = 0
	ZKEphemeral                   int32 = 1
	ZKPersistentSequential        int32 = 2
	ZKEphemeralSequential         int32 = 3
	ZKContainer                   int32 = 4
	ZKPersistentWithTTL           int32 = 5
	ZKPersistentSequentialWithTTL int32 = 6
)

// Watch event types (Watcher.Event.EventType). ZKEventSessionClosed is nanokv's own: the
// store reports a closed or expired session with it, so that the frontend drops the
// session's connections; it never goes on the wire.
const (
	ZKEventNone                   int32 = -1
	ZKEventNodeCreated            int32 = 1
	ZKEventNodeDeleted            int32 = 2
	ZKEventNodeDataChanged        int32 = 3
	ZKEventNodeChildrenChanged    int32 = 4
	ZKEventDataWatchRemoved       int32 = 5
	ZKEventChildWatchRemoved      int32 = 6
	ZKEventPersistentWatchRemoved int32 = 7
	ZKEventSessionClosed          int32 = -112
)

// ZKStat is a znode's Stat record, field for field.
type ZKStat struct {
	Czxid          int64 // zxid of the create
	Mzxid          int64 // zxid of the last setData (the create's until then)
	Ctime          int64 // unix ms of the create (the entry's clock)
	Mtime          int64 // unix ms of the last setData
	Version        int32 // number of setData
	Cversion       int32 // number of child creates and deletes
	Aversion       int32 // number of setACL
	EphemeralOwner int64 // the owning session; container and TTL nodes carry a marker
	DataLength     int32
	NumChildren    int32
	Pzxid          int64 // zxid of the last child create or delete
}

// ZKID is an authenticated identity (Id): scheme "world" id "anyone", scheme "digest"
// id "user:base64(sha1(user:password))", scheme "ip" id "127.0.0.1", ...
type ZKID struct {
	Scheme, ID string
}

// ZKACL is one entry of a znode's access control list.
type ZKACL struct {
	Perms      int32
	Scheme, ID string
}

// ZKOpenACL is ZooDefs.Ids.OPEN_ACL_UNSAFE: everyone may do everything.
var ZKOpenACL = []ZKACL{{Perms: ZKPermAll, Scheme: "world", ID: "anyone"}}
