package kvstore

import "math/big"

// ReplyWriter receives a command's reply. The RESP frontend renders it as RESP2 or RESP3;
// other frontends record what they need. Aggregate replies announce their length first and
// are followed by exactly that many elements (a map: twice that many, key then value).
type ReplyWriter interface {
	Status(s string)
	Error(msg string) // the whole message, prefix included: "ERR ...", "WRONGTYPE ..."
	Int(n int64)
	Bulk(b []byte)
	BulkString(s string)
	Null()      // a missing bulk: $-1 (RESP2), _ (RESP3)
	NullArray() // a missing aggregate: *-1 (RESP2), _ (RESP3)
	Array(n int)
	Map(n int)        // RESP2: an array of 2n
	Set(n int)        // RESP2: an array of n
	Double(f float64) // RESP2: a bulk string as Redis 7.0 prints it (%.17g)
	// Resp3 reports whether the client speaks RESP3: a few replies change shape with it
	// (ZRANGE WITHSCORES gives [member, score] pairs, HRANDFIELD WITHVALUES too).
	Resp3() bool
}

// HumanDoubler is a ReplyWriter that can send a double in Redis's human-friendly form,
// as GEOPOS's coordinates go: FormatHumanDouble's text, a RESP3 double in RESP3 and a
// bulk string in RESP2. A writer without it gets Double in RESP3, whose text differs.
type HumanDoubler interface {
	HumanDouble(f float64)
}

// humanDouble replies f through w in the human-friendly form.
func humanDouble(w ReplyWriter, f float64) {
	switch hd, ok := w.(HumanDoubler); {
	case ok:
		hd.HumanDouble(f)
	case w.Resp3():
		w.Double(f)
	default:
		w.BulkString(FormatHumanDouble(f))
	}
}

// FormatHumanDouble prints f as Redis's ld2string in LD_STR_HUMAN mode ("%.17Lf" of the
// double widened to a long double, which is exact, with the trailing zeros cut).
func FormatHumanDouble(f float64) string {
	return formatLongDouble(new(big.Float).SetFloat64(f))
}

// Error replies shared by many commands, word for word as Redis 7.0 sends them.
const (
	ErrWrongType   = "WRONGTYPE Operation against a key holding the wrong kind of value"
	ErrNotInteger  = "ERR value is not an integer or out of range"
	ErrNotFloat    = "ERR value is not a valid float"
	ErrSyntax      = "ERR syntax error"
	ErrNoSuchKey   = "ERR no such key"
	ErrOverflow    = "ERR increment or decrement would overflow"
	ErrIndexRange  = "ERR index out of range"
	ErrDBIndex     = "ERR DB index is out of range"
	ErrInvalidExp  = "ERR invalid expire time in '%s' command"
	ErrNaN         = "ERR resulting score is not a number (NaN)"
	ErrNotPositive = "ERR value is out of range, must be positive"
	ErrMinMaxFloat = "ERR min or max is not a float"
	ErrMinMaxLex   = "ERR min or max not valid string range item"
)

// WrongArgs is Redis's arity error for a command (lower-case name, as Redis 7.0 prints).
func WrongArgs(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

// discard drops replies: the applier uses it for entries nobody waits on (replicas,
// blind writes already answered at commit).
type discard struct{}

func (discard) Status(string)     {}
func (discard) Error(string)      {}
func (discard) Int(int64)         {}
func (discard) Bulk([]byte)       {}
func (discard) BulkString(string) {}
func (discard) Null()             {}
func (discard) NullArray()        {}
func (discard) Array(int)         {}
func (discard) Map(int)           {}
func (discard) Set(int)           {}
func (discard) Double(float64)    {}

// Discard is a ReplyWriter that drops the reply.
var Discard ReplyWriter = discard{}

func (discard) Resp3() bool { return false }

// Sink is where the applier writes the replies to a batch proposed on this node. Applied
// is called once the whole batch has been applied (and every reply written).
type Sink interface {
	ReplyWriter
	Applied()
}

// statusLines replies lines as an array of status replies (the HELP of a container).
func (c *Ctx) statusLines(lines []string) {
	c.W.Array(len(lines))
	for _, l := range lines {
		c.W.Status(l)
	}
}
