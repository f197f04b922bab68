package server

import (
	"fmt"
	"strings"
	"testing"
)

// A client told it is subscribed gets every message published after: a PUBLISH sent
// once the confirmation has been read counts the subscriber and delivers to it. (The
// subscription used to reach the hub just after the confirmation was queued, and a
// PUBLISH in between counted no receiver. The window was narrow: with it, about one
// run in six of these 1500 rounds failed, and TestRedisPy once under -race.)
func TestPublishAfterSubscribeConfirmation(t *testing.T) {
	s := startServer(t, Config{})
	defer s.Close()
	pub := rawConn(t, s)
	for i := range 1500 {
		sub := rawConn(t, s)
		ch, pat, matching := fmt.Sprintf("ch%d", i), fmt.Sprintf("pat%d*", i), fmt.Sprintf("pat%d.x", i)
		sub.expect(t, "*3\r\n$9\r\nsubscribe\r\n"+respBulk(ch)+":1", "SUBSCRIBE", ch)
		pub.expect(t, ":1", "PUBLISH", ch, "m1")
		if got, want := sub.readReply(t), "*3\r\n$7\r\nmessage\r\n"+respBulk(ch)+"$2\r\nm1"; got != want {
			t.Fatalf("round %d: the subscriber got %q, want %q", i, got, want)
		}
		sub.expect(t, "*3\r\n$10\r\npsubscribe\r\n"+respBulk(pat)+":2", "PSUBSCRIBE", pat)
		pub.expect(t, ":1", "PUBLISH", matching, "m2")
		if got, want := sub.readReply(t), "*4\r\n$8\r\npmessage\r\n"+respBulk(pat)+respBulk(matching)+"$2\r\nm2"; got != want {
			t.Fatalf("round %d: the subscriber got %q, want %q", i, got, want)
		}
		sub.nc.Close()
	}
}

// A subscriber CLIENT KILL (or an ACL change) disconnects is gone for the PUBLISH that
// follows, as Redis frees a client it kills at once: its goroutine may not have left
// the hub yet, but nothing is counted or queued for it.
func TestPublishAfterKillingSubscriber(t *testing.T) {
	s := startServer(t, Config{})
	defer s.Close()
	admin := rawConn(t, s)
	for i := range 300 {
		sub := rawConn(t, s)
		sub.send("CLIENT", "ID")
		id := strings.TrimPrefix(sub.readReply(t), ":")
		ch := fmt.Sprintf("ch%d", i)
		sub.expect(t, "*3\r\n$9\r\nsubscribe\r\n"+respBulk(ch)+":1", "SUBSCRIBE", ch)
		admin.expect(t, ":1", "CLIENT", "KILL", "ID", id)
		admin.expect(t, ":0", "PUBLISH", ch, "m")
	}
}
