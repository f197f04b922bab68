package kvstore

import (
	"bytes"
	"testing"
)

// ZooKeeper keeps null and empty data apart (getData answers length −1 or 0; a Java
// client reads null or byte[0]), through the log and through snapshots; its own nodes
// hold byte[0].
func TestZKNullAndEmptyDataStayApart(t *testing.T) {
	h := newZK(t)
	sess := h.session(30000)
	h.op(sess, nil, ZKOp{Type: ZKOpCreate, Path: "/null", Data: nil, ACL: ZKOpenACL})
	h.op(sess, nil, ZKOp{Type: ZKOpCreate, Path: "/empty", Data: []byte{}, ACL: ZKOpenACL})
	h.op(sess, nil, ZKOp{Type: ZKOpCreate, Path: "/set-empty", Data: []byte("x"), ACL: ZKOpenACL})
	h.op(sess, nil, ZKOp{Type: ZKOpSetData, Path: "/set-empty", Data: []byte{}, Version: -1})
	h.op(sess, nil, ZKOp{Type: ZKOpCreate, Path: "/set-null", Data: []byte("x"), ACL: ZKOpenACL})
	h.op(sess, nil, ZKOp{Type: ZKOpSetData, Path: "/set-null", Data: nil, Version: -1})
	want := map[string]bool{"/null": true, "/set-null": true, "/empty": false, "/set-empty": false,
		"/": false, "/zookeeper": false, "/zookeeper/quota": false, "/zookeeper/config": false}
	check := func(s *Store, when string) {
		for p, isNull := range want {
			n, ok := s.ZKGet(p)
			if !ok || (n.Data == nil) != isNull || len(n.Data) != 0 {
				t.Errorf("%s: %s: found %v, data %#v (null wanted: %v)", when, p, ok, n.Data, isNull)
			}
		}
	}
	check(h.s, "applied")
	var snap bytes.Buffer
	if err := h.s.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	b := New()
	if err := b.Restore(bytes.NewReader(snap.Bytes())); err != nil {
		t.Fatal(err)
	}
	check(b, "restored")
}
