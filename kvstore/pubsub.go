package kvstore

// PUBLISH and SPUBLISH go through the log, so that every member applies them and hands
// the message to its own subscribers (the resp frontend's Publisher): a client
// subscribed on any member hears what was published on any other, as Redis Cluster
// broadcasts PUBLISH to every node. A message changes no state; the reply, how many of
// the proposing member's clients received it, is that member's alone, as Redis
// Cluster counts only the clients of the node that was asked.

// Publisher delivers a published message to a member's subscribers and says how many
// received it. The applier calls it, so it must only queue the message, never block.
// shard: SPUBLISH (shard channels, a namespace of their own).
type Publisher interface {
	Publish(shard bool, channel, message []byte) int
}

// publisherBox holds a Publisher in an atomic.Pointer (an interface value cannot be).
type publisherBox struct{ p Publisher }

func init() {
	register(
		&Spec{Name: "publish", Arity: 3, Flags: FlagWrite | FlagFast | FlagPubSub, Group: "pubsub", Since: "2.0.0", Summary: "Post a message to a channel", Run: publishCmd(false)},
		&Spec{Name: "spublish", Arity: 3, Flags: FlagWrite | FlagFast | FlagPubSub, FirstKey: 1, LastKey: 1, Step: 1, Group: "pubsub", Since: "7.0.0", Summary: "Post a message to a shard channel", Run: publishCmd(true)},
	)
}

// SetPublisher sets who receives the messages the applier publishes (nil: nobody).
func (s *Store) SetPublisher(p Publisher) {
	if p == nil {
		s.publisher.Store(nil)
		return
	}
	s.publisher.Store(&publisherBox{p})
}

func publishCmd(shard bool) func(c *Ctx, args [][]byte) {
	return func(c *Ctx, args [][]byte) {
		n := 0
		if b := c.s.publisher.Load(); b != nil && c.writing {
			n = b.p.Publish(shard, args[1], args[2])
		}
		if _, inScript := c.W.(*luaWriter); inScript {
			// A script runs on every member, and a count that differs between them
			// must not steer what it writes: it sees 0 (the message is delivered).
			n = 0
		}
		c.W.Int(int64(n))
	}
}
