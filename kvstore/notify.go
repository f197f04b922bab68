package kvstore

import "strconv"

// Keyspace notifications (Redis's notify-keyspace-events). A write that changes a key
// publishes its event on __keyspace@<db>__:<key> (message: the event's name) and on
// __keyevent@<db>__:<event> (message: the key), as Redis's notifyKeyspaceEvent does.
// The applier publishes them, so every member tells its own subscribers of every write
// in the log, as each Redis node, replica or primary, notifies of the commands it
// executes. Which classes are published is each member's own setting, as in Redis.
//
// The events, their names and their order are Redis 7.0's, command by command
// (notify_test.go holds the cases taken from redis-server). What differs: a key whose
// TTL passed is deleted, with its "expired" event, when the leader's expiry entry or
// the next write to it is applied, never by a read.

// Notification classes, with Redis's bit values.
const (
	notifyKeyspace uint32 = 1 << iota // K
	notifyKeyevent                    // E
	notifyGeneric                     // g
	notifyString                      // $
	notifyList                        // l
	notifySet                         // s
	notifyHash                        // h
	notifyZSet                        // z
	notifyExpired                     // x
	notifyEvicted                     // e
	notifyStream                      // t
	notifyKeyMiss                     // m
	notifyModule                      // d
	notifyNew                         // n
)

// notifyAll is the class set "A" stands for.
const notifyAll = notifyGeneric | notifyString | notifyList | notifySet | notifyHash | notifyZSet |
	notifyExpired | notifyEvicted | notifyStream | notifyModule

var notifyFlagChars = []struct {
	c    byte
	flag uint32
}{
	{'g', notifyGeneric}, {'$', notifyString}, {'l', notifyList}, {'s', notifySet},
	{'h', notifyHash}, {'z', notifyZSet}, {'x', notifyExpired}, {'e', notifyEvicted},
	{'t', notifyStream}, {'d', notifyModule}, {'n', notifyNew},
	{'K', notifyKeyspace}, {'E', notifyKeyevent}, {'m', notifyKeyMiss},
}

// ParseNotifyFlags parses a notify-keyspace-events value ("KEA", "Ex", ""): ok is false
// for a character Redis does not know.
func ParseNotifyFlags(s string) (flags uint32, ok bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == 'A' {
			flags |= notifyAll
			continue
		}
		known := false
		for _, f := range notifyFlagChars {
			if f.c == s[i] {
				flags |= f.flag
				known = true
				break
			}
		}
		if !known {
			return 0, false
		}
	}
	return flags, true
}

// FormatNotifyFlags is CONFIG GET's rendering of flags, Redis's
// keyspaceEventsFlagsToString: "A" for the whole class set (which hides "n"), else
// each class, then K, E and m.
func FormatNotifyFlags(flags uint32) string {
	var b []byte
	if flags&notifyAll == notifyAll {
		b = append(b, 'A')
	}
	for _, f := range notifyFlagChars {
		switch {
		case f.flag == notifyKeyspace || f.flag == notifyKeyevent || f.flag == notifyKeyMiss:
			if flags&f.flag != 0 {
				b = append(b, f.c)
			}
		case flags&notifyAll != notifyAll && flags&f.flag != 0:
			b = append(b, f.c)
		}
	}
	return string(b)
}

// SetNotifyFlags sets which keyspace events this member publishes (ParseNotifyFlags).
func (s *Store) SetNotifyFlags(flags uint32) { s.notifyFlags.Store(flags) }

// NotifyFlags returns the classes this member publishes.
func (s *Store) NotifyFlags() uint32 { return s.notifyFlags.Load() }

// notify publishes event of class for key, if this member publishes that class. Only
// the applier publishes: a command run on the read path changed nothing.
func (c *Ctx) notify(class uint32, event string, key []byte) {
	flags := c.s.notifyFlags.Load()
	if flags&class == 0 || flags&(notifyKeyspace|notifyKeyevent) == 0 || !c.writing {
		return
	}
	c.publishEvent(flags, c.DB, event, key)
}

// notifyMiss publishes a read's miss of key ("keymiss", class m). Redis publishes it from
// the node that ran the read, and so does the member that served it.
func (c *Ctx) notifyMiss(key []byte) {
	if flags := c.s.notifyFlags.Load(); flags&notifyKeyMiss != 0 && flags&(notifyKeyspace|notifyKeyevent) != 0 {
		c.publishEvent(flags, c.DB, "keymiss", key)
	}
}

// publishEvent publishes one event in database db; flags says on which channels.
func (c *Ctx) publishEvent(flags uint32, db int, event string, key []byte) {
	b := c.s.publisher.Load()
	if b == nil {
		return
	}
	dbs := strconv.Itoa(db)
	if flags&notifyKeyspace != 0 {
		ch := make([]byte, 0, len("__keyspace@__:")+len(dbs)+len(key))
		ch = append(append(append(append(ch, "__keyspace@"...), dbs...), "__:"...), key...)
		b.p.Publish(false, ch, []byte(event))
	}
	if flags&notifyKeyevent != 0 {
		ch := make([]byte, 0, len("__keyevent@__:")+len(dbs)+len(event))
		ch = append(append(append(append(ch, "__keyevent@"...), dbs...), "__:"...), event...)
		b.p.Publish(false, ch, key)
	}
}
