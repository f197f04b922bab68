package resp

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// client-output-buffer-limit, as Redis applies it: a client whose pending output reaches
// its class's hard limit, or stays at or past its soft limit for longer than the soft
// limit's seconds, is disconnected, its pending output dropped. A client is in the
// pubsub class while it has subscriptions, else in the normal class; nanokv has no
// replicas, so the replica class's limits are kept and act on nobody.
//
// A connection's own replies are held to the normal class's limits where they pile
// up: after the requests of a network read have run (withinOutputLimit). What goes
// through a subscriber's queue (messages, a monitor's lines, invalidations) is held to
// its class's limits as it is queued (subscriber.add). A queue that is not a
// subscriber's (a monitor, a tracking client) is also cut past queueSafetyLimit when the
// normal class has no hard limit, as Redis's has none by default: a monitor that does
// not read must not hold the applier's memory.

// OutputLimit is one class's client-output-buffer-limit: bytes (0: none) and seconds.
type OutputLimit struct {
	Hard, Soft, SoftSeconds int64
}

// The classes, in the order CONFIG GET lists them.
const (
	classNormal = iota
	classReplica
	classPubsub
)

var outputClassNames = [3]string{"normal", "slave", "pubsub"}

// DefaultOutputLimits are Redis's defaults.
var DefaultOutputLimits = [3]OutputLimit{
	classReplica: {Hard: 256 << 20, Soft: 64 << 20, SoftSeconds: 60},
	classPubsub:  {Hard: 32 << 20, Soft: 8 << 20, SoftSeconds: 60},
}

// queueSafetyLimit cuts a subscriber queue of the normal class that has no hard limit.
const queueSafetyLimit = 32 << 20

// parseOutputLimits reads a CONFIG SET value into cur as Redis does: groups of class,
// hard, soft and seconds, each after one space; a class not named keeps its limits.
// It returns the reason for refusing v, or "".
func parseOutputLimits(v string, cur [3]OutputLimit) ([3]OutputLimit, string) {
	if v == "" {
		return cur, "" // no groups
	}
	args := strings.Split(v, " ")
	if len(args)%4 != 0 {
		return cur, "Wrong number of arguments in buffer limit configuration."
	}
	next := cur
	for i := 0; i < len(args); i += 4 {
		class := -1
		switch strings.ToLower(args[i]) {
		case "normal":
			class = classNormal
		case "slave", "replica":
			class = classReplica
		case "pubsub":
			class = classPubsub
		}
		if class < 0 {
			return cur, "Invalid client class specified in buffer limit configuration."
		}
		hard, okHard := memToULL(args[i+1])
		soft, okSoft := memToULL(args[i+2])
		secs, okSecs := strtoll(args[i+3])
		secs = int64(int32(secs)) // Redis keeps it in an int
		if !okHard || !okSoft || !okSecs || secs < 0 {
			return cur, "Error in hard, soft or soft_seconds setting in buffer limit configuration."
		}
		next[class] = OutputLimit{Hard: hard, Soft: soft, SoftSeconds: secs}
	}
	return next, ""
}

// strtoll reads a whole string as C's strtoll does in Redis's check of it: leading
// white space, a sign, digits, saturating past a long long; "" is 0.
func strtoll(v string) (int64, bool) {
	if v == "" {
		return 0, true
	}
	digits := strings.TrimLeft(v, " \t\n\v\f\r")
	neg := false
	if digits != "" && (digits[0] == '+' || digits[0] == '-') {
		neg, digits = digits[0] == '-', digits[1:]
	}
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		n = math.MaxInt64
		if neg {
			return math.MinInt64, true
		}
	}
	if neg {
		n = -n
	}
	return n, true
}

// formatOutputLimits is CONFIG GET's value.
func formatOutputLimits(l [3]OutputLimit) string {
	var b []byte
	for class, lim := range l {
		if class > 0 {
			b = append(b, ' ')
		}
		b = append(b, outputClassNames[class]...)
		b = append(strconv.AppendUint(append(b, ' '), uint64(lim.Hard), 10), ' ')
		b = append(strconv.AppendUint(b, uint64(lim.Soft), 10), ' ')
		b = strconv.AppendInt(b, lim.SoftSeconds, 10)
	}
	return string(b)
}

// exceeded reports whether used bytes of pending output break l at now (unix seconds).
// softSince is when the output was first seen at or past the soft limit (0: it is not),
// which it updates: as in Redis, the soft limit breaks once it has been reached for
// longer than its seconds, every look in between at or past it.
func (l OutputLimit) exceeded(used, now int64, softSince *int64) bool {
	if l.Hard > 0 && uint64(used) >= uint64(l.Hard) {
		return true
	}
	if l.Soft == 0 || uint64(used) < uint64(l.Soft) {
		*softSince = 0
		return false
	}
	if *softSince == 0 {
		*softSince = now
		return false
	}
	return now-*softSince > l.SoftSeconds
}

// outputLimit is the limit of a class, read without a lock (CONFIG SET stores them).
func (s *Server) outputLimit(class int) OutputLimit {
	return (*s.outLimits.Load())[class]
}

// overLimit applies the limits of the subscriber's class to its queue (s.mu held),
// extra bytes held behind the connection's output included.
func (s *subscriber) overLimit(extra int) bool {
	class := classNormal
	if s.c.clientType() == "pubsub" {
		class = classPubsub
	}
	lim := s.c.s.outputLimit(class)
	used := int64(len(s.out) + extra)
	if class == classNormal && lim.Hard == 0 && used > queueSafetyLimit {
		return true
	}
	now := int64(0)
	if lim.Soft > 0 {
		now = time.Now().Unix()
	}
	return lim.exceeded(used, now, &s.softSince)
}

// withinOutputLimit applies the normal class's limits to the replies a connection's
// requests left pending; false: it is over them, and is disconnected, its replies
// dropped. A subscriber's replies are its queue's (overLimit).
func (c *conn) withinOutputLimit() bool {
	if c.sub != nil {
		return true
	}
	lim := c.s.outputLimit(classNormal)
	if lim.Hard == 0 && lim.Soft == 0 {
		return true
	}
	if !lim.exceeded(int64(len(c.B)), time.Now().Unix(), &c.softSince) {
		return true
	}
	c.s.config().Logf("resp: closing client %s: output over client-output-buffer-limit (%d bytes)", c.addr, len(c.B))
	c.B = c.B[:0]
	c.kill()
	return false
}
