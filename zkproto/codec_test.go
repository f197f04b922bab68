package zkproto

import (
	"bytes"
	"encoding/hex"
	"errors"
	"net"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nanokv/nanokv/kvstore"
)

var testStat = kvstore.ZKStat{
	Czxid: 0x100000001, Mzxid: 0x100000002, Ctime: 1700000000000, Mtime: 1700000000001,
	Version: 3, Cversion: 4, Aversion: 5, EphemeralOwner: 0x1234, DataLength: 6,
	NumChildren: 7, Pzxid: 0x100000003,
}

var testACL = []kvstore.ZKACL{
	{Perms: kvstore.ZKPermAll, Scheme: "world", ID: "anyone"},
	{Perms: kvstore.ZKPermRead, Scheme: "digest", ID: "u:x"},
}

// sampleRecords has every record, with nil, empty and filled slices where they occur.
func sampleRecords() []Record {
	return []Record{
		&ConnectRequest{ProtocolVersion: 0, LastZxidSeen: 9, TimeOut: 30000, SessionID: 0x55, Passwd: make([]byte, 16)},
		&ConnectRequest{TimeOut: 4000, Passwd: []byte{1, 2}, ReadOnly: true, HasReadOnly: true},
		&ConnectRequest{HasReadOnly: true},
		&ConnectResponse{TimeOut: 4000, SessionID: -7, Passwd: []byte("0123456789abcdef")},
		&ConnectResponse{TimeOut: 4000, SessionID: 1, Passwd: []byte{}, HasReadOnly: true},
		&RequestHeader{Xid: 12, Type: kvstore.ZKOpCreate},
		&ReplyHeader{Xid: -1, Zxid: -1, Err: kvstore.ZNoNode},
		&MultiHeader{Type: -1, Done: true, Err: -1},
		&CreateRequest{Path: "/a", Data: []byte("x"), ACL: testACL, Flags: kvstore.ZKEphemeralSequential},
		&CreateRequest{Path: "", Data: nil, ACL: nil},
		&CreateRequest{Path: "/é", Data: []byte{}, ACL: []kvstore.ZKACL{}},
		&CreateTTLRequest{Path: "/t", Data: []byte("y"), ACL: testACL[:1], Flags: kvstore.ZKPersistentWithTTL, TTL: 1 << 40},
		&DeleteRequest{Path: "/a", Version: -1},
		&ExistsRequest{Path: "/a", Watch: true},
		&GetDataRequest{Path: "/a", Watch: true},
		&GetChildrenRequest{Path: "/a"},
		&GetChildren2Request{Path: "/a", Watch: true},
		&SetDataRequest{Path: "/a", Data: []byte("new"), Version: 3},
		&GetACLRequest{Path: "/a"},
		&SetACLRequest{Path: "/a", ACL: testACL, Version: 2},
		&SyncRequest{Path: "/"},
		&CheckVersionRequest{Path: "/a", Version: 1},
		&ReconfigRequest{JoiningServers: "server.4=h:1:2;3", LeavingServers: "1", NewMembers: "", CurConfigID: -1},
		&CheckWatchesRequest{Path: "/a", Type: 3},
		&RemoveWatchesRequest{Path: "/a", Type: 2},
		&SetWatches{RelativeZxid: 5, DataWatches: []string{"/a", "/b"}, ExistWatches: []string{}, ChildWatches: nil},
		&SetWatches2{RelativeZxid: 6, DataWatches: []string{"/a"}, ExistWatches: []string{"/n"}, ChildWatches: []string{"/"},
			PersistentWatches: []string{"/p"}, PersistentRecursiveWatches: []string{"/r", ""}},
		&AuthPacket{Type: 0, Scheme: "digest", Auth: []byte("user:pw")},
		&SASLRequest{Token: []byte{9, 9}},
		&SetSASLResponse{Token: nil},
		&AddWatchRequest{Path: "/w", Mode: 1},
		&GetEphemeralsRequest{PrefixPath: "/e"},
		&GetAllChildrenNumberRequest{Path: "/a"},
		&MultiRequest{},
		&MultiRequest{Ops: []MultiOp{
			{Type: kvstore.ZKOpCreate, Body: &CreateRequest{Path: "/m", Data: []byte("1"), ACL: testACL}},
			{Type: kvstore.ZKOpCreate2, Body: &CreateRequest{Path: "/m2", ACL: testACL}},
			{Type: kvstore.ZKOpCreateContainer, Body: &CreateRequest{Path: "/c", ACL: testACL, Flags: kvstore.ZKContainer}},
			{Type: kvstore.ZKOpCreateTTL, Body: &CreateTTLRequest{Path: "/t", ACL: testACL, Flags: kvstore.ZKPersistentWithTTL, TTL: 10}},
			{Type: kvstore.ZKOpDelete, Body: &DeleteRequest{Path: "/d", Version: -1}},
			{Type: kvstore.ZKOpSetData, Body: &SetDataRequest{Path: "/s", Data: []byte("v"), Version: 0}},
			{Type: kvstore.ZKOpCheck, Body: &CheckVersionRequest{Path: "/k", Version: 2}},
		}},
		&MultiRequest{Ops: []MultiOp{
			{Type: kvstore.ZKOpGetData, Body: &GetDataRequest{Path: "/a"}},
			{Type: kvstore.ZKOpGetChildren, Body: &GetChildrenRequest{Path: "/"}},
		}},
		&ErrorResponse{Err: kvstore.ZNodeExists},
		&CreateResponse{Path: "/a0000000001"},
		&Create2Response{Path: "/a", Stat: testStat},
		&StatResponse{Stat: testStat},
		&GetDataResponse{Data: []byte("data"), Stat: testStat},
		&GetDataResponse{Data: nil, Stat: testStat},
		&GetACLResponse{ACL: testACL, Stat: testStat},
		&GetChildrenResponse{Children: []string{"a", "b"}},
		&GetChildrenResponse{Children: []string{}},
		&GetChildren2Response{Children: []string{"x"}, Stat: testStat},
		&SyncResponse{Path: "/"},
		&WatcherEvent{Type: kvstore.ZKEventNodeDataChanged, State: 3, Path: "/a"},
		&GetEphemeralsResponse{Ephemerals: []string{"/e/1"}},
		&GetAllChildrenNumberResponse{TotalNumber: 42},
		&WhoAmIResponse{ClientInfo: []ClientInfo{{AuthScheme: "ip", User: "127.0.0.1"}, {AuthScheme: "digest", User: "u"}}},
		&WhoAmIResponse{ClientInfo: nil},
		&MultiResponse{},
		&MultiResponse{Results: []MultiResult{
			{Type: kvstore.ZKOpCreate, Path: "/m"},
			{Type: kvstore.ZKOpCreate2, Path: "/m2", Stat: testStat},
			{Type: kvstore.ZKOpDelete},
			{Type: kvstore.ZKOpSetData, Stat: testStat},
			{Type: kvstore.ZKOpCheck},
			{Type: kvstore.ZKOpGetData, Data: []byte("d"), Stat: testStat},
			{Type: kvstore.ZKOpGetChildren, Children: []string{"c"}},
			{Type: kvstore.ZKOpError, Err: kvstore.ZNoNode},
		}},
	}
}

func newLike(r Record) Record {
	return reflect.New(reflect.TypeOf(r).Elem()).Interface().(Record)
}

func TestRecordRoundTrip(t *testing.T) {
	for i, r := range sampleRecords() {
		b := r.Append(nil)
		got := newLike(r)
		if err := DecodeRecord(b, got); err != nil {
			t.Fatalf("%d %T: decode: %v", i, r, err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("%d %T: round trip\n got %+v\nwant %+v", i, r, got, r)
		}
		// The encoding is canonical: re-encoding gives the same bytes.
		if b2 := got.Append(nil); !bytes.Equal(b, b2) {
			t.Fatalf("%d %T: re-encoding differs", i, r)
		}
		// Appending after existing bytes leaves them alone.
		pre := []byte{0xAA, 0xBB}
		if b3 := r.Append(pre); !bytes.Equal(b3[:2], pre) || !bytes.Equal(b3[2:], b) {
			t.Fatalf("%d %T: Append does not append", i, r)
		}
	}
}

// TestRecordTruncated: every strict prefix of an encoding fails to decode (never panics).
// The connect records are the exception ZooKeeper makes: without its last byte a record
// with readOnly is a valid record from a client that does not send it.
func TestRecordTruncated(t *testing.T) {
	for i, r := range sampleRecords() {
		b := r.Append(nil)
		for n := 0; n < len(b); n++ {
			got := newLike(r)
			err := DecodeRecord(b[:n:n], got)
			if err == nil {
				if n == len(b)-1 && hasReadOnly(r) {
					continue
				}
				t.Fatalf("%d %T: prefix %d/%d decoded as %+v", i, r, n, len(b), got)
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("%d %T: prefix %d: error %v does not wrap ErrMalformed", i, r, n, err)
			}
		}
	}
}

func hasReadOnly(r Record) bool {
	switch r := r.(type) {
	case *ConnectRequest:
		return r.HasReadOnly
	case *ConnectResponse:
		return r.HasReadOnly
	}
	return false
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Golden encodings, written by hand from zookeeper.jute (big-endian ints, int32 lengths).
func TestGoldenBytes(t *testing.T) {
	passwd := make([]byte, 16)
	cases := []struct {
		name string
		rec  Record
		hex  string
	}{
		{"connect without readOnly (go-zookeeper)",
			&ConnectRequest{TimeOut: 30000, Passwd: passwd},
			`00000000 0000000000000000 00007530 0000000000000000
			 00000010 00000000000000000000000000000000`},
		{"connect with readOnly (Java, C, kazoo)",
			&ConnectRequest{LastZxidSeen: 0x200000005, TimeOut: 10000, SessionID: 0x1000a, Passwd: passwd, ReadOnly: true, HasReadOnly: true},
			`00000000 0000000200000005 00002710 000000000001000a
			 00000010 00000000000000000000000000000000 01`},
		{"connect response, old client",
			&ConnectResponse{TimeOut: 10000, SessionID: 0x1000a, Passwd: []byte{1, 2}},
			`00000000 00002710 000000000001000a 00000002 0102`},
		{"connect response, readOnly false",
			&ConnectResponse{TimeOut: 10000, SessionID: 0x1000a, Passwd: []byte{1, 2}, HasReadOnly: true},
			`00000000 00002710 000000000001000a 00000002 0102 00`},
		{"reply header",
			&ReplyHeader{Xid: 7, Zxid: 0x100000002, Err: kvstore.ZNoNode},
			`00000007 0000000100000002 ffffff9b`},
		{"stat",
			&StatResponse{Stat: testStat},
			`0000000100000001 0000000100000002 0000018bcfe56800 0000018bcfe56801
			 00000003 00000004 00000005 0000000000001234 00000006 00000007 0000000100000003`},
		{"create request, nil data, open ACL",
			&CreateRequest{Path: "/a", ACL: kvstore.ZKOpenACL, Flags: 1},
			`00000002 2f61 ffffffff 00000001 0000001f 00000005 776f726c64 00000006 616e796f6e65 00000001`},
		{"multi request: create then check",
			&MultiRequest{Ops: []MultiOp{
				{Type: kvstore.ZKOpCreate, Body: &CreateRequest{Path: "/a", Data: []byte{}, ACL: []kvstore.ZKACL{}}},
				{Type: kvstore.ZKOpCheck, Body: &CheckVersionRequest{Path: "/b", Version: -1}},
			}},
			`00000001 00 ffffffff  00000002 2f61 00000000 00000000 00000000
			 0000000d 00 ffffffff  00000002 2f62 ffffffff
			 ffffffff 01 ffffffff`},
		// A multi whose second op failed: every result is an error result, ZOK before
		// the failed op; the error code is in the header and again in the body.
		{"multi response with a failed op",
			&MultiResponse{Results: []MultiResult{
				{Type: kvstore.ZKOpError, Err: kvstore.ZOK},
				{Type: kvstore.ZKOpError, Err: kvstore.ZNodeExists},
			}},
			`ffffffff 00 00000000 00000000
			 ffffffff 00 ffffff92 ffffff92
			 ffffffff 01 ffffffff`},
		{"multi response: create, create2, setData",
			&MultiResponse{Results: []MultiResult{
				{Type: kvstore.ZKOpCreate, Path: "/a"},
				{Type: kvstore.ZKOpCreate2, Path: "/b", Stat: kvstore.ZKStat{Version: 1}},
				{Type: kvstore.ZKOpDelete},
			}},
			`00000001 00 00000000 00000002 2f61
			 0000000f 00 00000000 00000002 2f62
			   0000000000000000 0000000000000000 0000000000000000 0000000000000000
			   00000001 00000000 00000000 0000000000000000 00000000 00000000 0000000000000000
			 00000002 00 00000000
			 ffffffff 01 ffffffff`},
		{"watcher event",
			&WatcherEvent{Type: kvstore.ZKEventNodeDeleted, State: 3, Path: "/x"},
			`00000002 00000003 00000002 2f78`},
	}
	for _, c := range cases {
		want := mustHex(t, c.hex)
		if got := c.rec.Append(nil); !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %x\nwant %x", c.name, got, want)
			continue
		}
		dec := newLike(c.rec)
		if err := DecodeRecord(want, dec); err != nil || !reflect.DeepEqual(dec, c.rec) {
			t.Errorf("%s: decode = %+v, %v", c.name, dec, err)
		}
	}

	// A whole reply frame: the length covers header and body.
	frame := AppendReply(nil, ReplyHeader{Xid: 3, Zxid: 0x10, Err: 0}, &CreateResponse{Path: "/a"})
	if want := mustHex(t, `00000016 00000003 0000000000000010 00000000 00000002 2f61`); !bytes.Equal(frame, want) {
		t.Errorf("reply frame:\n got %x\nwant %x", frame, want)
	}
	// An error reply is the header alone.
	frame = AppendReply(nil, ReplyHeader{Xid: 3, Zxid: 0x10, Err: kvstore.ZNoNode}, nil)
	if want := mustHex(t, `00000010 00000003 0000000000000010 ffffff9b`); !bytes.Equal(frame, want) {
		t.Errorf("error reply frame:\n got %x\nwant %x", frame, want)
	}
}

func TestMultiResponseAsZooKeeperWrites(t *testing.T) {
	// createContainer and createTTL results go out as create2; deleteContainer as delete.
	r := MultiResponse{Results: []MultiResult{
		{Type: kvstore.ZKOpCreateContainer, Path: "/c", Stat: testStat},
		{Type: kvstore.ZKOpCreateTTL, Path: "/t", Stat: testStat},
		{Type: kvstore.ZKOpDeleteContainer},
	}}
	var got MultiResponse
	if err := DecodeRecord(r.Append(nil), &got); err != nil {
		t.Fatal(err)
	}
	want := []MultiResult{
		{Type: kvstore.ZKOpCreate2, Path: "/c", Stat: testStat},
		{Type: kvstore.ZKOpCreate2, Path: "/t", Stat: testStat},
		{Type: kvstore.ZKOpDelete},
	}
	if !reflect.DeepEqual(got.Results, want) {
		t.Fatalf("got %+v", got.Results)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a result type ZooKeeper cannot send did not panic")
		}
	}()
	(&MultiResponse{Results: []MultiResult{{Type: kvstore.ZKOpExists}}}).Append(nil)
}

func TestParseFrame(t *testing.T) {
	frame := AppendFrame([]byte{}, func(b []byte) []byte { return append(b, "hello"...) })
	if want := mustHex(t, "00000005 68656c6c6f"); !bytes.Equal(frame, want) {
		t.Fatalf("AppendFrame = %x", frame)
	}
	two := append(append([]byte{}, frame...), frame...)
	p, n, err := ParseFrame(two, 0)
	if err != nil || n != 9 || string(p) != "hello" {
		t.Fatalf("ParseFrame = %q, %d, %v", p, n, err)
	}
	for i := 0; i < len(frame); i++ {
		_, n, err := ParseFrame(frame[:i], 0)
		if err != ErrIncomplete {
			t.Fatalf("prefix %d: %v", i, err)
		}
		if wantN := 0; i >= 4 && n != 9 || i < 4 && n != wantN {
			t.Fatalf("prefix %d: need %d", i, n)
		}
	}
	hdr := func(l uint32) []byte { return AppendInt32(nil, int32(l)) }
	// ZooKeeper: len < 0 || len > jute.maxbuffer closes the connection; len == maxbuffer is fine.
	if _, n, err := ParseFrame(hdr(DefaultMaxBuffer), 0); err != ErrIncomplete || n != DefaultMaxBuffer+4 {
		t.Fatalf("len = maxBuffer: %d %v", n, err)
	}
	for _, l := range []uint32{DefaultMaxBuffer + 1, 0x7fffffff, 0xffffffff, 0x80000000, 0x72756f6b /* "ruok" */} {
		if _, _, err := ParseFrame(hdr(l), 0); err != ErrTooLarge {
			t.Fatalf("len %#x: %v", l, err)
		}
	}
	if _, _, err := ParseFrame(hdr(100), 99); err != ErrTooLarge {
		t.Fatalf("custom maxBuffer: %v", err)
	}
	if p, n, err := ParseFrame(hdr(0), 0); err != nil || n != 4 || len(p) != 0 {
		t.Fatalf("empty frame: %v", err)
	}
}

// sampleRequests has one request per opcode a client may send.
func sampleRequests() []Request {
	var reqs []Request
	xid := int32(1)
	add := func(op int32, body Record) {
		reqs = append(reqs, Request{Header: RequestHeader{Xid: xid, Type: op}, Body: body})
		xid++
	}
	for _, r := range sampleRecords() {
		switch r := r.(type) {
		case *CreateRequest:
			add(kvstore.ZKOpCreate, r)
			add(kvstore.ZKOpCreate2, r)
			add(kvstore.ZKOpCreateContainer, r)
		case *CreateTTLRequest:
			add(kvstore.ZKOpCreateTTL, r)
		case *DeleteRequest:
			add(kvstore.ZKOpDelete, r)
		case *ExistsRequest:
			add(kvstore.ZKOpExists, r)
		case *GetDataRequest:
			add(kvstore.ZKOpGetData, r)
		case *SetDataRequest:
			add(kvstore.ZKOpSetData, r)
		case *GetACLRequest:
			add(kvstore.ZKOpGetACL, r)
		case *SetACLRequest:
			add(kvstore.ZKOpSetACL, r)
		case *GetChildrenRequest:
			add(kvstore.ZKOpGetChildren, r)
		case *SyncRequest:
			add(kvstore.ZKOpSync, r)
		case *GetChildren2Request:
			add(kvstore.ZKOpGetChildren2, r)
		case *CheckVersionRequest:
			add(kvstore.ZKOpCheck, r)
		case *MultiRequest:
			if len(r.Ops) == 0 || r.Ops[0].Type != kvstore.ZKOpGetData {
				add(kvstore.ZKOpMulti, r)
			}
			if len(r.Ops) == 0 || r.Ops[0].Type == kvstore.ZKOpGetData {
				add(kvstore.ZKOpMultiRead, r)
			}
		case *ReconfigRequest:
			add(kvstore.ZKOpReconfig, r)
		case *CheckWatchesRequest:
			add(kvstore.ZKOpCheckWatches, r)
		case *RemoveWatchesRequest:
			add(kvstore.ZKOpRemoveWatches, r)
		case *AuthPacket:
			reqs = append(reqs, Request{Header: RequestHeader{Xid: XidAuth, Type: kvstore.ZKOpAuth}, Body: r})
		case *SetWatches:
			reqs = append(reqs, Request{Header: RequestHeader{Xid: XidSetWatches, Type: kvstore.ZKOpSetWatches}, Body: r})
		case *SetWatches2:
			reqs = append(reqs, Request{Header: RequestHeader{Xid: XidSetWatches, Type: kvstore.ZKOpSetWatches2}, Body: r})
		case *SASLRequest:
			add(kvstore.ZKOpSASL, r)
		case *GetEphemeralsRequest:
			add(kvstore.ZKOpGetEphemerals, r)
		case *GetAllChildrenNumberRequest:
			add(kvstore.ZKOpGetAllChildrenNumber, r)
		case *AddWatchRequest:
			add(kvstore.ZKOpAddWatch, r)
		}
	}
	reqs = append(reqs, Request{Header: RequestHeader{Xid: XidPing, Type: kvstore.ZKOpPing}})
	add(kvstore.ZKOpCloseSession, nil)
	add(kvstore.ZKOpWhoAmI, nil)
	return reqs
}

func TestParseRequestRoundTrip(t *testing.T) {
	seen := map[int32]bool{}
	var stream []byte
	reqs := sampleRequests()
	for _, want := range reqs {
		stream = AppendRequest(stream, want.Header, want.Body)
		seen[want.Header.Type] = true
	}
	// Every opcode NewRequestBody knows is covered.
	for op := int32(-20); op < 200; op++ {
		if _, known := NewRequestBody(op); known && !seen[op] {
			t.Errorf("opcode %d has no sample request", op)
		}
	}
	// Parse them back from one pipelined stream.
	for i, want := range reqs {
		payload, n, err := ParseFrame(stream, DefaultMaxBuffer)
		if err != nil {
			t.Fatalf("%d: frame: %v", i, err)
		}
		stream = stream[n:]
		got, err := ParseRequest(payload, DefaultMaxBuffer)
		if err != nil {
			t.Fatalf("%d (op %d): %v", i, want.Header.Type, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%d: got %+v want %+v", i, got, want)
		}
		// Truncated payloads give an error, never a panic.
		for k := 0; k < len(payload); k++ {
			if _, err := ParseRequest(payload[:k:k], 0); err == nil {
				t.Fatalf("%d (op %d): prefix %d/%d parsed", i, want.Header.Type, k, len(payload))
			}
		}
	}
	if len(stream) != 0 {
		t.Fatalf("%d bytes left", len(stream))
	}
}

func TestParseRequestErrors(t *testing.T) {
	req := func(op int32, body []byte) []byte {
		b := (&RequestHeader{Xid: 9, Type: op}).Append(nil)
		return append(b, body...)
	}
	var re *RequestError

	// A payload shorter than the header: no xid to answer; ZooKeeper closes.
	_, err := ParseRequest([]byte{0, 0, 0, 9, 0, 0}, 0)
	if !errors.Is(err, ErrMalformed) || errors.As(err, &re) {
		t.Fatalf("short header: %v", err)
	}

	// Unknown opcodes (and the server-only ones): ZUnimplemented, then close.
	for _, op := range []int32{10, 23, 99, kvstore.ZKOpNotification, kvstore.ZKOpCreateSession, kvstore.ZKOpDeleteContainer, kvstore.ZKOpError} {
		got, err := ParseRequest(req(op, nil), 0)
		if !errors.As(err, &re) || !errors.Is(err, ErrUnknownOp) || re.Code != kvstore.ZUnimplemented || !re.Close ||
			re.Header != (RequestHeader{Xid: 9, Type: op}) || got.Header != re.Header {
			t.Fatalf("op %d: %+v, %v", op, got, err)
		}
	}

	// A body that does not decode: ZMarshallingError, the connection stays.
	_, err = ParseRequest(req(kvstore.ZKOpGetData, []byte{0, 0, 0, 5, '/'}), 0)
	if !errors.As(err, &re) || re.Code != kvstore.ZMarshallingError || re.Close || !errors.Is(err, ErrMalformed) {
		t.Fatalf("bad getData: %v", err)
	}
	// ... except auth and sasl, which ZooKeeper decodes in processPacket: close, no reply.
	_, err = ParseRequest(req(kvstore.ZKOpAuth, []byte{0, 0}), 0)
	if !errors.As(err, &re) || re.Code != 0 || !re.Close {
		t.Fatalf("bad auth: %v", err)
	}

	multi := func(ops ...MultiOp) []byte { return (&MultiRequest{Ops: ops}).Append(nil) }
	get := MultiOp{Type: kvstore.ZKOpGetData, Body: &GetDataRequest{Path: "/a"}}
	del := MultiOp{Type: kvstore.ZKOpDelete, Body: &DeleteRequest{Path: "/a"}}
	for name, payload := range map[string][]byte{
		"read op in multi":      req(kvstore.ZKOpMulti, multi(get)),
		"write op in multiRead": req(kvstore.ZKOpMultiRead, multi(del)),
		"mixed ops":             req(kvstore.ZKOpMulti, multi(del, get)),
		"exists op":             req(kvstore.ZKOpMulti, append(AppendBool(AppendInt32(nil, kvstore.ZKOpExists), false), 0, 0, 0, 0)),
		"no terminator":         req(kvstore.ZKOpMulti, multi(del)[:len(multi(del))-9]),
		"vector count −2":       req(kvstore.ZKOpSetWatches, mustHex(t, "0000000000000000 fffffffe")),
		"string length −2":      req(kvstore.ZKOpSync, mustHex(t, "fffffffe")),
		"string past the end":   req(kvstore.ZKOpSync, mustHex(t, "00000002 2f")),
		"buffer length 2^31−1":  req(kvstore.ZKOpSetData, mustHex(t, "00000001 2f 7fffffff")),
		"vector count 2^31−1":   req(kvstore.ZKOpSetACL, mustHex(t, "00000001 2f 7fffffff 00000001")),
		"empty body":            req(kvstore.ZKOpGetEphemerals, nil),
	} {
		_, err := ParseRequest(payload, 0)
		if !errors.As(err, &re) || re.Code != kvstore.ZMarshallingError || !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}

	// A payload above maxBuffer is refused before anything is read.
	if _, err := ParseRequest(make([]byte, 101), 100); err != ErrTooLarge {
		t.Fatalf("payload > maxBuffer: %v", err)
	}

	// The readOnly byte is optional; a reply must carry it only when the request did.
	full := (&ConnectRequest{TimeOut: 1, Passwd: []byte{}, HasReadOnly: true, ReadOnly: true}).Append(nil)
	cr, err := ParseConnectRequest(full)
	if err != nil || !cr.HasReadOnly || !cr.ReadOnly {
		t.Fatalf("connect with readOnly: %+v %v", cr, err)
	}
	cr, err = ParseConnectRequest(full[:len(full)-1])
	if err != nil || cr.HasReadOnly || cr.ReadOnly {
		t.Fatalf("connect without readOnly: %+v %v", cr, err)
	}
	if _, err := ParseConnectRequest(full[:10]); !errors.Is(err, ErrMalformed) {
		t.Fatalf("short connect: %v", err)
	}
}

// allocBytes is the average heap allocation of f in bytes.
func allocBytes(f func()) uint64 {
	const runs = 50
	f()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < runs; i++ {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / runs
}

// TestHugeLengthsDoNotAllocate: declared lengths and counts far above the payload are
// refused before anything of their size is allocated.
func TestHugeLengthsDoNotAllocate(t *testing.T) {
	payloads := [][]byte{
		mustHex(t, "00000001 00000005 00000001 2f 7fffffff"),                      // setData, buffer 2 GiB
		mustHex(t, "00000001 00000065 0000000000000000 7fffffff"),                 // setWatches, 2^31 strings
		mustHex(t, "00000001 00000007 00000001 2f 10000000 00000001"),             // setACL, 2^28 ACLs
		mustHex(t, "00000001 00000001 7ffffff0"),                                  // create, path 2 GiB
		mustHex(t, "00000001 0000000e 00000001 00 ffffffff 00000001 2f 7fffffff"), // multi, data 2 GiB
	}
	for i, p := range payloads {
		if _, err := ParseRequest(p, 0); err == nil {
			t.Fatalf("%d: parsed", i)
		}
		if n := allocBytes(func() { ParseRequest(p, 0) }); n > 1024 {
			t.Errorf("%d: %d bytes allocated", i, n)
		}
	}
	var resp GetChildrenResponse
	huge := mustHex(t, "7fffffff 00000000")
	if n := allocBytes(func() { DecodeRecord(huge, &resp) }); n > 256 {
		t.Errorf("reply vector: %d bytes allocated", n)
	}
	tooLong := mustHex(t, "7fffffff")
	if n := testing.AllocsPerRun(100, func() { ParseFrame(tooLong, 0) }); n != 0 {
		t.Errorf("ParseFrame allocates %v", n)
	}
}

// TestAllocationBounded: the worst a valid payload can make the decoder allocate is a few
// times its size (a vector of empty strings: 4 bytes on the wire, 16 in memory).
func TestAllocationBounded(t *testing.T) {
	const n = 200000
	p := (&RequestHeader{Xid: XidSetWatches, Type: kvstore.ZKOpSetWatches}).Append(nil)
	p = AppendInt64(p, 0)
	p = AppendInt32(p, n)
	p = append(p, make([]byte, 4*n)...)
	p = append(p, mustHex(t, "ffffffff ffffffff")...)
	req, err := ParseRequest(p, 0)
	if err != nil || len(req.Body.(*SetWatches).DataWatches) != n {
		t.Fatalf("%v", err)
	}
	if got := allocBytes(func() { ParseRequest(p, 0) }); got > uint64(5*len(p)) {
		t.Fatalf("%d bytes allocated for a %d-byte payload", got, len(p))
	}
}

// TestDecodedBytesAreCopies: nothing decoded points into the (reused) read buffer.
func TestDecodedBytesAreCopies(t *testing.T) {
	buf := AppendRequest(nil, RequestHeader{Xid: 1, Type: kvstore.ZKOpSetData}, &SetDataRequest{Path: "/p", Data: []byte("data")})
	payload, _, _ := ParseFrame(buf, 0)
	req, err := ParseRequest(payload, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range buf {
		buf[i] = 'X'
	}
	if sd := req.Body.(*SetDataRequest); sd.Path != "/p" || string(sd.Data) != "data" {
		t.Fatalf("decoded values changed with the buffer: %+v", sd)
	}
}

func TestParseReply(t *testing.T) {
	frame := AppendReply(nil, ReplyHeader{Xid: 4, Zxid: 8}, &GetDataResponse{Data: []byte("v"), Stat: testStat})
	payload, _, _ := ParseFrame(frame, 0)
	var body GetDataResponse
	h, err := ParseReply(payload, &body)
	if err != nil || h != (ReplyHeader{Xid: 4, Zxid: 8}) || string(body.Data) != "v" || body.Stat != testStat {
		t.Fatalf("%+v %+v %v", h, body, err)
	}
	// An error reply has no body; ParseReply does not look for one.
	frame = AppendReply(nil, ReplyHeader{Xid: 4, Zxid: 8, Err: kvstore.ZNoNode}, nil)
	payload, _, _ = ParseFrame(frame, 0)
	if h, err := ParseReply(payload, &body); err != nil || h.Err != kvstore.ZNoNode {
		t.Fatalf("%+v %v", h, err)
	}
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...interface{}) {}

// TestGoZookeeperClient runs go-zookeeper's client against a tiny server written with this
// codec: the client's ConnectRequest and requests must decode, and our replies must be
// what the client expects.
func TestGoZookeeperClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	connCh := make(chan ConnectRequest, 1)
	reqCh := make(chan Request, 64)
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		done <- serveFakeZK(c, connCh, reqCh)
	}()

	zc, _, err := zk.Connect([]string{ln.Addr().String()}, 4*time.Second,
		zk.WithLogger(quietLogger{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			zc.Close()
		}
	}()

	select {
	case cr := <-connCh:
		want := ConnectRequest{ProtocolVersion: 0, LastZxidSeen: 0, TimeOut: 4000, SessionID: 0, Passwd: make([]byte, 16)}
		if !reflect.DeepEqual(cr, want) {
			t.Fatalf("connect request %+v, want %+v (go-zookeeper sends no readOnly byte)", cr, want)
		}
	case err := <-done:
		t.Fatalf("server: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no connect request")
	}

	path, err := zc.Create("/a", []byte("x"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	if err != nil || path != "/a" {
		t.Fatalf("Create = %q, %v", path, err)
	}
	data, stat, err := zc.Get("/a")
	if err != nil || string(data) != "hello" || *stat != zk.Stat(testStat) {
		t.Fatalf("Get = %q, %+v, %v", data, stat, err)
	}
	ok, _, err := zc.Exists("/none")
	if err != nil || ok {
		t.Fatalf("Exists = %v, %v", ok, err)
	}
	children, stat, err := zc.Children("/")
	if err != nil || !reflect.DeepEqual(children, []string{"a", "b"}) || *stat != zk.Stat(testStat) {
		t.Fatalf("Children = %q, %+v, %v", children, stat, err)
	}
	res, err := zc.Multi(
		&zk.CreateRequest{Path: "/m", Data: []byte("1"), Acl: zk.WorldACL(zk.PermRead), Flags: 0},
		&zk.SetDataRequest{Path: "/a", Data: []byte("2"), Version: 4},
		&zk.DeleteRequest{Path: "/d", Version: -1},
		&zk.CheckVersionRequest{Path: "/k", Version: 7},
	)
	if err != nil || len(res) != 4 || res[0].String != "/m" || *res[1].Stat != zk.Stat(testStat) {
		t.Fatalf("Multi = %+v, %v", res, err)
	}
	zc.Close()
	closed = true
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("server: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no closeSession")
	}
	close(reqCh)

	var got []Request
	for r := range reqCh {
		if r.Header.Type != kvstore.ZKOpPing {
			r.Header.Xid = 0 // go-zookeeper numbers from 1; the order is what matters
			got = append(got, r)
		}
	}
	open := []kvstore.ZKACL{{Perms: kvstore.ZKPermAll, Scheme: "world", ID: "anyone"}}
	want := []Request{
		{Header: RequestHeader{Type: kvstore.ZKOpCreate}, Body: &CreateRequest{Path: "/a", Data: []byte("x"), ACL: open, Flags: kvstore.ZKEphemeral}},
		{Header: RequestHeader{Type: kvstore.ZKOpGetData}, Body: &GetDataRequest{Path: "/a"}},
		{Header: RequestHeader{Type: kvstore.ZKOpExists}, Body: &ExistsRequest{Path: "/none"}},
		{Header: RequestHeader{Type: kvstore.ZKOpGetChildren2}, Body: &GetChildren2Request{Path: "/"}},
		{Header: RequestHeader{Type: kvstore.ZKOpMulti}, Body: &MultiRequest{Ops: []MultiOp{
			{Type: kvstore.ZKOpCreate, Body: &CreateRequest{Path: "/m", Data: []byte("1"), ACL: []kvstore.ZKACL{{Perms: kvstore.ZKPermRead, Scheme: "world", ID: "anyone"}}}},
			{Type: kvstore.ZKOpSetData, Body: &SetDataRequest{Path: "/a", Data: []byte("2"), Version: 4}},
			{Type: kvstore.ZKOpDelete, Body: &DeleteRequest{Path: "/d", Version: -1}},
			{Type: kvstore.ZKOpCheck, Body: &CheckVersionRequest{Path: "/k", Version: 7}},
		}}},
		{Header: RequestHeader{Type: kvstore.ZKOpCloseSession}},
	}
	if !reflect.DeepEqual(got, want) {
		for i := range got {
			t.Logf("got %d: %+v %+v", i, got[i].Header, got[i].Body)
		}
		t.Fatalf("requests differ")
	}
}

// serveFakeZK answers one go-zookeeper connection until closeSession.
func serveFakeZK(c net.Conn, connCh chan<- ConnectRequest, reqCh chan<- Request) error {
	c.SetDeadline(time.Now().Add(20 * time.Second))
	var buf []byte
	tmp := make([]byte, 4096)
	next := func() ([]byte, error) {
		for {
			p, n, err := ParseFrame(buf, DefaultMaxBuffer)
			if err == nil {
				p = bytes.Clone(p)
				buf = buf[n:]
				return p, nil
			}
			if err != ErrIncomplete {
				return nil, err
			}
			m, err := c.Read(tmp)
			if err != nil {
				return nil, err
			}
			buf = append(buf, tmp[:m]...)
		}
	}
	p, err := next()
	if err != nil {
		return err
	}
	cr, err := ParseConnectRequest(p)
	if err != nil {
		return err
	}
	connCh <- cr
	passwd := bytes.Repeat([]byte{1}, 16)
	out := AppendFrame(nil, (&ConnectResponse{TimeOut: cr.TimeOut, SessionID: 0x77, Passwd: passwd, HasReadOnly: cr.HasReadOnly}).Append)
	if _, err := c.Write(out); err != nil {
		return err
	}
	zxid := int64(0)
	for {
		p, err := next()
		if err != nil {
			return err
		}
		req, err := ParseRequest(p, DefaultMaxBuffer)
		if err != nil {
			return err
		}
		reqCh <- req
		zxid++
		h := ReplyHeader{Xid: req.Header.Xid, Zxid: zxid}
		var body Record
		switch b := req.Body.(type) {
		case *CreateRequest:
			body = &CreateResponse{Path: b.Path}
		case *GetDataRequest:
			body = &GetDataResponse{Data: []byte("hello"), Stat: testStat}
		case *ExistsRequest:
			h.Err = kvstore.ZNoNode
		case *GetChildren2Request:
			body = &GetChildren2Response{Children: []string{"a", "b"}, Stat: testStat}
		case *MultiRequest:
			var mr MultiResponse
			for _, op := range b.Ops {
				r := MultiResult{Type: op.Type}
				switch o := op.Body.(type) {
				case *CreateRequest:
					r.Path = o.Path
				case *SetDataRequest:
					r.Stat = testStat
				}
				mr.Results = append(mr.Results, r)
			}
			body = &mr
		case nil:
			if req.Header.Type == kvstore.ZKOpCloseSession {
				_, err := c.Write(AppendReply(nil, h, nil))
				return err
			}
		default:
			h.Err = kvstore.ZUnimplemented
		}
		if _, err := c.Write(AppendReply(nil, h, body)); err != nil {
			return err
		}
	}
}
