package server

// Corpus generator of the differential test (see difftest_test.go). A seeded math/rand
// draws commands over a small key space (k0..k19) and member space (m0..m9), so that type
// collisions (WRONGTYPE), missing keys and overwrites are frequent. Key names are the only
// arguments of the form k<digits>: the runner finds an item's keys by that shape.
//
// Every TTL the corpus sets is at least 1000 s and two TTLs drawn in one run differ by at
// least 10 s, so nothing expires during the run and EXPIRE ... GT/LT comparisons cannot
// depend on the few milliseconds between the two servers. Past deadlines are generated on
// purpose only where Redis deletes the key at once (EXPIRE family, GETEX EXAT/PXAT): SET
// with a past EXAT/PXAT leaves a logically expired key that redis-server itself drops at a
// time that depends on its active expiry cycle (DBSIZE would then be timing-dependent).

import (
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"hash/crc64"
	"math"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	diffKeys    = 26 // k20..k22 are the HyperLogLog family's, k23..k25 the streams'
	diffMembers = 10
	// diffMaxCard is more than any collection of the corpus holds (growPast makes 513):
	// SPOP, SRANDMEMBER... with this count take the whole collection.
	diffMaxCard = 600
)

// item is one command of the corpus and how to compare its replies.
type item struct {
	args      []string
	norm      norm
	sub       []norm     // nExec: normalisation of each queued command
	subArgs   [][]string // nExec: the queued commands
	other     bool       // sent on the second connection (writes that break a WATCH)
	scan      int        // > 0: SCAN-like; index of the cursor argument
	scanPairs bool       // HSCAN/ZSCAN: elements come as pairs
	universe  []string   // nRandom: query listing the collection the reply is drawn from
	lexKeys   []string   // BYLEX: zsets whose scores must be all equal for a defined reply
	txStart   bool       // WATCH/MULTI: a transaction region starts
	txEnd     bool       // EXEC/DISCARD: it ends
	noTx      bool       // cannot be queued in MULTI (needs extra round trips)
	extraDBs  []int      // other databases it writes (MOVE, COPY ... DB)
	pipe      int        // > 1: this item and the next pipe-1 are sent as one pipeline
	// flushOnMismatch: a mismatch leaves whole databases different (SWAPDB, FLUSHDB)
	flushOnMismatch bool
}

func mk(n norm, args ...string) item { return item{args: args, norm: n} }

func one(n norm, args ...string) []item { return []item{mk(n, args...)} }

func isKeyArg(s string) bool {
	if len(s) < 2 || s[0] != 'k' {
		return false
	}
	for _, c := range s[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func itemKeys(args []string) []string {
	var out []string
	for _, a := range args[1:] {
		if isKeyArg(a) {
			out = append(out, a)
		}
	}
	return out
}

type family struct {
	name   string
	weight int
	fn     func(*gen) []item
	txOK   bool // may be queued inside MULTI
	// home keys: the family draws 75% of its keys from k<lo>..k<lo+n-1>, so that most of
	// its commands find a key of their type; the rest are drawn from all keys (WRONGTYPE)
	homeLo, homeN int
}

type gen struct {
	r     *rand.Rand
	dbs   []int // databases this pass uses; dbs[0] is the second connection's
	fams  []family
	total int
	ttls  []int
	// current family's home keys (see family)
	homeLo, homeN int
}

func newGen(seed int64, dbs []int, fams []family) *gen {
	g := &gen{r: rand.New(rand.NewSource(seed)), dbs: dbs, fams: fams}
	for _, f := range fams {
		g.total += f.weight
	}
	return g
}

func mainFamilies() []family {
	return []family{
		{"strings", 18, (*gen).fStrings, true, 0, 5},
		{"keys", 14, (*gen).fKeys, true, 0, 0},
		{"hashes", 12, (*gen).fHashes, true, 5, 4},
		{"lists", 12, (*gen).fLists, true, 9, 4},
		{"sets", 12, (*gen).fSets, true, 13, 4},
		{"zsets", 18, (*gen).fZsets, true, 15, 5},
		{"bitmaps", 8, (*gen).fBitmaps, true, 0, 5},
		{"geo", 8, (*gen).fGeo, true, 15, 5},
		{"hyperloglog", 6, (*gen).fHLL, true, 20, 3},
		{"streams", 8, (*gen).fStreams, true, 23, 3},
		{"scripting", 6, (*gen).fScripts, true, 0, 0},
		{"tx", 7, (*gen).fTx, false, 0, 0},
		{"pipeline", 4, (*gen).fPipeline, false, 0, 0},
		{"malformed", 5, (*gen).fMalformed, true, 0, 0},
		{"conn", 2, (*gen).fConn, true, 0, 0},
	}
}

// resp3Families is the RESP3 pass: the families whose replies change shape in RESP3
// (doubles, maps, sets, nulls, pairs), plus transactions (null EXEC).
func resp3Families() []family {
	return []family{
		{"zsets", 10, (*gen).fZsets, true, 15, 5},
		{"hashes", 6, (*gen).fHashes, true, 5, 4},
		{"sets", 4, (*gen).fSets, true, 13, 4},
		{"strings", 4, (*gen).fStrings, true, 0, 5},
		{"bitmaps", 2, (*gen).fBitmaps, true, 0, 5},
		{"geo", 2, (*gen).fGeo, true, 15, 5},
		{"hyperloglog", 1, (*gen).fHLL, true, 20, 3},
		{"streams", 2, (*gen).fStreams, true, 23, 3},
		{"scripting", 2, (*gen).fScripts, true, 0, 0},
		{"lists", 2, (*gen).fLists, true, 9, 4},
		{"keys", 2, (*gen).fKeys, true, 0, 0},
		{"tx", 3, (*gen).fTx, false, 0, 0},
		{"pipeline", 1, (*gen).fPipeline, false, 0, 0},
	}
}

// next draws one step of the corpus: one or more items.
func (g *gen) next() []item {
	return g.call(g.family())
}

func (g *gen) family() family {
	w := g.r.Intn(g.total)
	for _, f := range g.fams {
		if w < f.weight {
			return f
		}
		w -= f.weight
	}
	panic("unreachable")
}

// notYet lists commands nanokv does not implement yet (see the README): drawing them
// would only report their absence, so the generator draws again. None at present.
var notYet = map[string]bool{}

func drawsNotYet(its []item) bool {
	for _, it := range its {
		for _, a := range append([][]string{it.args}, it.subArgs...) {
			if len(a) > 0 && notYet[strings.ToUpper(a[0])] {
				return true
			}
		}
	}
	return false
}

// call runs a family's generator with its home keys.
func (g *gen) call(f family) []item {
	lo, n := g.homeLo, g.homeN
	g.homeLo, g.homeN = f.homeLo, f.homeN
	defer func() { g.homeLo, g.homeN = lo, n }()
	for {
		if its := f.fn(g); !drawsNotYet(its) {
			return its
		}
	}
}

// unscripted lists connection commands that txInner draws and a script here cannot call:
// nanokv's scripts call the store's commands (Redis's refuse CLIENT and HELLO too, and
// run PUBSUB: see the README).
var unscripted = map[string]bool{"HELLO": true, "CLIENT": true, "PUBSUB": true}

// scriptInner draws one command for a script to call.
func (g *gen) scriptInner() item {
	for {
		if it := g.txInner(); !unscripted[strings.ToUpper(it.args[0])] {
			return it
		}
	}
}

// txInner draws one command that can be queued inside MULTI.
func (g *gen) txInner() item {
	for {
		f := g.family()
		if !f.txOK || f.name == "malformed" {
			continue
		}
		its := g.call(f)
		if len(its) != 1 || its[0].scan > 0 || its[0].noTx || its[0].other || its[0].txStart || its[0].txEnd {
			continue
		}
		it := its[0]
		it.universe = nil // no membership check inside EXEC
		return it
	}
}

// --- random pieces -------------------------------------------------------------------------

func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

func (g *gen) pick(xs ...string) string { return xs[g.r.Intn(len(xs))] }

func (g *gen) key() string {
	if g.homeN > 0 && g.chance(0.75) {
		return "k" + strconv.Itoa(g.homeLo+g.r.Intn(g.homeN))
	}
	return "k" + strconv.Itoa(g.r.Intn(diffKeys))
}

func (g *gen) keys(lo, hi int) []string {
	n := lo + g.r.Intn(hi-lo+1)
	out := make([]string, n)
	for i := range out {
		out[i] = g.key()
	}
	return out
}

func (g *gen) member() string { return "m" + strconv.Itoa(g.r.Intn(diffMembers)) }

// bigMember is over 64 bytes: a hash or sorted set holding it is in Redis's large encoding.
var bigMember = strings.Repeat("z", 65)

// setMember is a set's member: now and then an integer, so that some sets are intsets.
func (g *gen) setMember() string {
	if g.chance(0.25) {
		return g.pick("1", "2", "-3", "10")
	}
	return g.member()
}

func (g *gen) members(lo, hi int) []string {
	n := lo + g.r.Intn(hi-lo+1)
	out := make([]string, n)
	for i := range out {
		out[i] = g.member()
	}
	return out
}

// name returns a command or option name, sometimes in lower or mixed case.
func (g *gen) name(s string) string {
	switch x := g.r.Intn(20); {
	case x == 0:
		return strings.ToLower(s)
	case x == 1:
		b := []byte(s)
		for i := range b {
			if g.r.Intn(2) == 0 && b[i] >= 'A' && b[i] <= 'Z' {
				b[i] += 'a' - 'A'
			}
		}
		return string(b)
	}
	return s
}

var diffValues = []string{
	"0", "1", "-1", "7", "42", "100", "-20", "3.5", "-0.5", "1e3", "10.50", "5.0e3",
	"9223372036854775807", "-9223372036854775808", "abc", "foo", "bar", "hello world", "",
	" 12", "12 ", "0x1f", "inf", "nan", "+5", "007", "1.0", "m1", "m5", "-0", "1e20", "0.1",
	"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "a\r\nb", "\x00\xff\x01", "ü€",
	"123456789012345678901234567890123456789012345", // over 44 bytes: a "raw" string
	// over 64 bytes: a hash field or value, or a sorted set member, in Redis's large encoding
	"yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy",
}

func (g *gen) value() string { return diffValues[g.r.Intn(len(diffValues))] }

// restoreArgs is a RESTORE of a payload in the plain RDB encodings (as DUMP writes on
// nanokv), now and then corrupt, of a newer RDB version, empty or with a duplicate,
// with TTLs and options valid and not.
func (g *gen) restoreArgs(k string) []string {
	var b []byte
	str := func(s string) { b = append(append(b, byte(len(s))), s...) } // values are < 64 bytes
	n := 1 + g.r.Intn(4)
	if g.chance(0.05) {
		n = 0 // an empty collection: Redis refuses it
	}
	typ := g.r.Intn(5)
	b = append(b, []byte{0, 1, 2, 5, 4}[typ])
	if typ == 0 {
		str(g.value())
	} else {
		b = append(b, byte(n))
		for i := 0; i < n; i++ {
			m := g.member()
			switch {
			case typ == 4:
				// distinct fields: a small hash with a field twice Redis loads as it is
				// (README)
				m = "m" + strconv.Itoa(2*i+g.r.Intn(2))
			case g.chance(0.05):
				m = "m0" // perhaps a duplicate, which Redis refuses in a set or a zset
			}
			str(m)
			switch typ {
			case 3: // ZSET_2: a little-endian double
				b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(g.r.Intn(5))-1.5))
			case 4:
				str(g.value())
			}
		}
	}
	ver := uint16(10)
	if g.chance(0.03) {
		ver = 11
	}
	b = binary.LittleEndian.AppendUint16(b, ver)
	b = binary.LittleEndian.AppendUint64(b, ^crc64.Update(^uint64(0), crc64.MakeTable(0x95ac9329ac4bc9b5), b))
	if g.chance(0.03) {
		b[g.r.Intn(len(b))] ^= 0x10
	}
	// a relative TTL is 0 or long, so that nothing expires while the test runs; an
	// absolute one is long past or far ahead
	ttl := g.pick("0", "0", "5000000", "-1", "x")
	opts := [][]string{}
	if g.chance(0.15) {
		opts = append(opts, []string{g.name("ABSTTL")})
		ttl = g.pick("0", "1", "99999999999999")
	}
	if g.chance(0.5) {
		opts = append(opts, []string{g.name("REPLACE")})
	}
	args := []string{g.name("RESTORE"), k, ttl, string(b)}
	if g.chance(0.1) {
		opts = append(opts, []string{g.name(g.pick("IDLETIME", "FREQ")), g.pick("0", "10", "-1", "300", "x")})
	}
	if g.chance(0.03) {
		opts = append(opts, []string{g.pick("FOO", "IDLETIME")})
	}
	return append(args, g.shuffle(opts)...)
}

// elem is a list element: mostly members, so that LREM/LPOS/LINSERT find them.
func (g *gen) elem() string {
	if g.chance(0.7) {
		return g.member()
	}
	return g.pick("1", "2", "-3", "x y", "", "foo")
}

// ttl draws a TTL in seconds, 1000..100000, distinct from the others of the run.
func (g *gen) ttl() int {
	if len(g.ttls) == 0 {
		g.ttls = g.r.Perm(9901)
	}
	v := g.ttls[len(g.ttls)-1]
	g.ttls = g.ttls[:len(g.ttls)-1]
	return 1000 + 10*v
}

func (g *gen) now() int64 { return time.Now().Unix() }

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func (g *gen) intArg() string {
	if g.chance(0.85) {
		return g.pick("1", "2", "3", "-1", "5", "10", "-7", "100", "0")
	}
	return g.pick("abc", "1.5", "9223372036854775807", "-9223372036854775808", "99999999999999999999", "", " 1", "+1")
}

func (g *gen) floatArg() string {
	if g.chance(0.85) {
		return g.pick("0.1", "1.5", "-2", "3e2", "10", "-0.25", "1e-5", "5.0e3", "0", "2.5", "0.2",
			"0.30000000000000004", "1e20", "-0", "5e-324", "1.7976931348623157e308", "17")
	}
	return g.pick("abc", "inf", "-inf", "nan", "1e400", "0x10", "", " 1", "1.2.3", "+inf")
}

func (g *gen) score() string {
	if g.chance(0.93) {
		return g.pick("0", "0", "0", "1", "2", "1.5", "-1", "2.5", "100", "-3.25", "1e2", "+inf", "-inf", "0.1", "3",
			"-0", "0.2", "1e20", "5e-324", "0.30000000000000004", "123456789.125")
	}
	return g.pick("nan", "abc", "", "(1", "1e400", "0x10", "inf")
}

func (g *gen) idx() string {
	return g.pick("0", "1", "2", "3", "-1", "-2", "-3", "5", "10", "-100", "100")
}

func (g *gen) count() string {
	if g.chance(0.9) {
		return g.pick("0", "1", "2", "3", "5", "10")
	}
	return g.pick("-1", "abc", "-5", "1.5")
}

func (g *gen) scoreRange() string {
	if g.chance(0.95) {
		return g.pick("-inf", "+inf", "0", "1", "(1", "2", "(2", "1.5", "(0", "-1", "100", "inf", "(-inf", "(+inf", "3")
	}
	return g.pick("abc", "(x", "[1", "")
}

func (g *gen) lexRange() string {
	if g.chance(0.95) {
		return g.pick("-", "+", "[m0", "[m3", "(m3", "[m5", "(m9", "[m9", "[a", "(z", "[", "(")
	}
	return g.pick("m3", "abc", "")
}

func (g *gen) matchPattern(keys bool) string {
	if keys {
		return g.pick("*", "k1*", "k?", "k[0-4]", "k[^1]*", "*9", "nomatch*", "k1?", "*")
	}
	return g.pick("*", "m1*", "m[0-4]", "m?", "x*", "*5")
}

// ttlOrBad is a SETEX seconds argument; pttlOrBad the PSETEX one.
func (g *gen) ttlOrBad() string {
	if g.chance(0.9) {
		return strconv.Itoa(g.ttl())
	}
	return g.pick("0", "-1", "abc", "1.5", "9223372036854775807")
}

func (g *gen) pttlOrBad() string {
	if g.chance(0.9) {
		return strconv.Itoa(g.ttl() * 1000)
	}
	return g.pick("0", "-1", "abc", "9223372036854775807")
}

// expiryOpt is one of EX/PX/EXAT/PXAT with a valid long deadline.
func (g *gen) expiryOpt() []string {
	t := int64(g.ttl())
	switch g.r.Intn(4) {
	case 0:
		return []string{g.name("EX"), itoa(t)}
	case 1:
		return []string{g.name("PX"), itoa(t * 1000)}
	case 2:
		return []string{g.name("EXAT"), itoa(g.now() + t)}
	}
	return []string{g.name("PXAT"), itoa((g.now()+t)*1000 + int64(g.r.Intn(1000)))}
}

func (g *gen) shuffle(opts [][]string) []string {
	g.r.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
	var out []string
	for _, o := range opts {
		out = append(out, o...)
	}
	return out
}

func cat(head []string, tail ...string) []string {
	return append(append([]string(nil), head...), tail...)
}

// --- strings -------------------------------------------------------------------------------

func (g *gen) fStrings() []item {
	k := g.key()
	switch g.r.Intn(27) {
	case 0, 1, 2:
		return one(nExact, g.name("GET"), k)
	case 3, 4, 5:
		return one(nExact, g.setArgs(k)...)
	case 6:
		return one(nExact, g.name("SETNX"), k, g.value())
	case 7:
		return one(nExact, g.name("SETEX"), k, g.ttlOrBad(), g.value())
	case 8:
		return one(nExact, g.name("PSETEX"), k, g.pttlOrBad(), g.value())
	case 9:
		return one(nExact, g.name("GETSET"), k, g.value())
	case 10:
		return one(nExact, g.name("GETDEL"), k)
	case 11:
		return one(nExact, g.getexArgs(k)...)
	case 12:
		return one(nExact, cat([]string{g.name("MGET")}, g.keys(1, 4)...)...)
	case 13, 14:
		args := []string{g.name(g.pick("MSET", "MSETNX"))}
		for i := 0; i < 1+g.r.Intn(3); i++ {
			args = append(args, g.key(), g.value())
		}
		if g.chance(0.1) {
			args = args[:len(args)-1]
		}
		return one(nExact, args...)
	case 15:
		return one(nExact, g.name("APPEND"), k, g.value())
	case 16:
		return one(nExact, g.name("STRLEN"), k)
	case 17:
		return one(nExact, g.name(g.pick("INCR", "DECR")), k)
	case 18, 19:
		return one(nExact, g.name(g.pick("INCRBY", "DECRBY")), k, g.intArg())
	case 20, 21:
		return one(nExact, g.name("INCRBYFLOAT"), k, g.floatArg())
	case 22:
		return one(nExact, g.name(g.pick("GETRANGE", "SUBSTR")), k, g.idx(), g.idx())
	case 23:
		off := g.pick("0", "1", "3", "10", "100", "0", "2")
		if g.chance(0.08) {
			off = g.pick("-1", "abc", "536870912", "536870911")
		}
		v := g.value()
		if off == "536870911" {
			v = "" // valid offset, empty value: no allocation
		}
		return one(nExact, g.name("SETRANGE"), k, off, v)
	case 24:
		return one(nExact, g.name("SET"), k, g.pick("0", "1", "10", "-5", "3.5", "1e2", "9223372036854775806", "-9223372036854775807"))
	case 25:
		args := []string{g.name("LCS"), k, g.key()}
		switch g.r.Intn(4) {
		case 1:
			args = append(args, g.name("LEN"))
		case 2:
			args = append(args, g.name("IDX"))
			if g.chance(0.5) {
				args = append(args, g.name("MINMATCHLEN"), g.pick("0", "1", "2", "abc"))
			}
			if g.chance(0.5) {
				args = append(args, g.name("WITHMATCHLEN"))
			}
		case 3:
			if g.chance(0.5) {
				args = append(args, g.name("FOO"))
			}
		}
		return one(nExact, args...)
	default:
		return one(nExact, g.name("SET"), k, g.value())
	}
}

// fBitmaps draws the bit commands. Offsets stay under a few hundred bits: a string
// of 512 MB is a valid reply of both servers, and a slow one to compare.
func (g *gen) fBitmaps() []item {
	k := g.key()
	switch g.r.Intn(12) {
	case 0, 1, 2:
		bit := g.pick("0", "1", "1")
		if g.chance(0.08) {
			bit = g.pick("2", "-1", "x", "")
		}
		return one(nExact, g.name("SETBIT"), k, g.bitOffset(), bit)
	case 3:
		return one(nExact, g.name("GETBIT"), k, g.bitOffset())
	case 4:
		args := []string{g.name("BITCOUNT"), k}
		if n := g.r.Intn(8); n > 0 {
			args = append(args, g.idx(), g.idx())
			if n > 5 {
				args = append(args, g.bitUnit())
			}
		}
		if g.chance(0.05) {
			args = args[:len(args)-1] // a lone start: a syntax error
		}
		return one(nExact, args...)
	case 5:
		bit := g.pick("0", "1")
		if g.chance(0.08) {
			bit = g.pick("2", "-1", "x")
		}
		args := []string{g.name("BITPOS"), k, bit}
		switch g.r.Intn(5) {
		case 1:
			args = append(args, g.idx())
		case 2:
			args = append(args, g.idx(), g.idx())
		case 3, 4:
			args = append(args, g.idx(), g.idx(), g.bitUnit())
		}
		return one(nExact, args...)
	case 6:
		op := g.pick("AND", "OR", "XOR", "NOT")
		srcs := g.keys(1, 3)
		if op == "NOT" && g.chance(0.9) {
			srcs = srcs[:1]
		}
		if g.chance(0.04) {
			op = g.pick("FOO", "")
		}
		return one(nExact, cat([]string{g.name("BITOP"), g.name(op), g.key()}, srcs...)...)
	case 7, 8, 9:
		return one(nExact, cat([]string{g.name("BITFIELD"), k}, g.bitfieldOps(false)...)...)
	case 10:
		return one(nExact, cat([]string{g.name("BITFIELD_RO"), k}, g.bitfieldOps(true)...)...)
	default:
		return one(nExact, g.name("GET"), k)
	}
}

func (g *gen) bitOffset() string {
	if g.chance(0.92) {
		return g.pick("0", "1", "3", "7", "8", "9", "15", "16", "23", "31", "40", "63", "64", "100", "255")
	}
	return g.pick("-1", "abc", "4294967296", "1.5", "", "#1", "+1")
}

func (g *gen) bitUnit() string {
	if g.chance(0.95) {
		return g.name(g.pick("BIT", "BYTE"))
	}
	return "FOO"
}

// bitfieldOps draws BITFIELD's subcommands; readOnly draws mostly GETs.
func (g *gen) bitfieldOps(readOnly bool) []string {
	var args []string
	for n := g.r.Intn(4); n >= 0; n-- {
		typ := g.pick("i8", "u8", "i5", "u4", "i16", "u16", "i64", "u63", "i32", "u1", "i1", "u3", "i3")
		if g.chance(0.04) {
			typ = g.pick("u64", "i65", "x8", "i0", "I8", "")
		}
		off := g.pick("0", "1", "4", "7", "13", "32", "#0", "#1", "#3", "100")
		if g.chance(0.04) {
			off = g.pick("-1", "#-1", "x", "#")
		}
		val := g.pick("0", "1", "5", "-1", "100", "127", "-128", "255", "300", "-300", "1000",
			"9223372036854775807", "-9223372036854775808")
		if g.chance(0.04) {
			val = g.pick("x", "1.5", "")
		}
		switch x := g.r.Intn(10); {
		case readOnly && x < 8, x < 3:
			args = append(args, g.name("GET"), typ, off)
		case x < 5:
			args = append(args, g.name("SET"), typ, off, val)
		case x < 8:
			args = append(args, g.name("INCRBY"), typ, off, val)
		default:
			args = append(args, g.name("OVERFLOW"), g.pick("WRAP", "SAT", "FAIL", "SAT", "FAIL", "foo"))
		}
	}
	if g.chance(0.04) {
		args = args[:len(args)-1] // a subcommand short of arguments
	}
	return args
}

// geoBase places each member m<i> (diffMembers of them) around Sicily and beyond;
// geoPos moves it by one of four small steps. No two members can share a position, and
// distances from the search centers below do not tie, so that the order of a sorted
// search is defined (Redis leaves ties to qsort). Distances are compared as printed
// (%.4f); STOREDIST, which stores them whole, is left to kvstore's tests: glibc's sin
// and cos are off by an ulp for about one argument in a thousand.
var geoBase = [diffMembers][2]float64{
	{13.361389, 38.115556}, {15.087269, 37.502669}, {13.583333, 37.316667}, {12.758489, 38.788135},
	{14.2681, 40.8518}, {12.4964, 41.9028}, {9.19, 45.4642}, {-0.1276, 51.5072},
	{151.2093, -33.8688}, {179.1, -16.6},
}

func (g *gen) geoPos(m string) (string, string) {
	i, _ := strconv.Atoi(m[1:])
	v := float64(g.r.Intn(4))
	return strconv.FormatFloat(geoBase[i][0]+v*0.0131, 'f', 6, 64), strconv.FormatFloat(geoBase[i][1]+v*0.0077, 'f', 6, 64)
}

func (g *gen) geoCenter() []string {
	if g.chance(0.06) {
		return []string{g.pick("181", "abc", "15", "-180.5"), g.pick("37", "86", "x", "-85.1")}
	}
	c := [][2]string{{"15", "37"}, {"13.5", "38"}, {"12.9", "41.2"}, {"0", "0"}, {"179.95", "-16.7"},
		{"-179.9", "-16.5"}, {"14.7711", "38.3919"}, {"151.3", "-33.9"}}[g.r.Intn(8)]
	return c[:]
}

func (g *gen) geoRadius() []string {
	r := g.pick("0", "1", "10", "50", "100", "150", "200", "300", "500", "1000", "3000", "12000")
	if g.chance(0.05) {
		r = g.pick("-1", "x", "")
	}
	return []string{r, g.geoUnit()}
}

func (g *gen) geoUnit() string {
	if g.chance(0.95) {
		return g.name(g.pick("km", "km", "km", "m", "mi", "ft"))
	}
	return g.pick("parsec", "")
}

// geoOptions draws the reply options of a search; store is the STORE word to use, or "".
func (g *gen) geoOptions(store string) []string {
	var opts [][]string
	for _, o := range []string{"WITHDIST", "WITHCOORD", "WITHHASH"} {
		if store == "" && g.chance(0.3) {
			opts = append(opts, []string{g.name(o)})
		}
	}
	if g.chance(0.5) {
		opts = append(opts, []string{g.name(g.pick("ASC", "DESC"))})
	}
	if g.chance(0.4) {
		c := []string{g.name("COUNT"), g.pick("1", "2", "3", "5")}
		if g.chance(0.05) {
			c[1] = g.pick("0", "-1", "x")
		}
		if g.chance(0.3) {
			c = append(c, g.name("ANY"))
		}
		opts = append(opts, c)
	} else if g.chance(0.03) {
		opts = append(opts, []string{g.name("ANY")}) // without COUNT: an error
	}
	if store != "" {
		opts = append(opts, []string{g.name(store), g.key()})
	}
	if store == "" && g.chance(0.03) {
		opts = append(opts, []string{g.name("WITHDIST")}, []string{g.name("STORE"), g.key()}) // an error
	}
	return g.shuffle(opts)
}

// fHLL draws HyperLogLog commands. A quarter of their keys belong to other families, so an HLL is
// also appended to, overwritten and cut short there: a corrupt HLL must fail as in Redis.
func (g *gen) fHLL() []item {
	k := g.key()
	switch g.r.Intn(12) {
	case 0, 1, 2, 3:
		args := []string{g.name("PFADD"), k}
		n := g.r.Intn(6)
		if g.chance(0.1) {
			n = 100 + g.r.Intn(400) // enough registers to outgrow the sparse code
		}
		for range n {
			if g.chance(0.5) {
				args = append(args, g.elem())
			} else {
				args = append(args, "e"+strconv.Itoa(g.r.Intn(20000)))
			}
		}
		return one(nExact, args...)
	case 4, 5:
		return one(nExact, cat([]string{g.name("PFCOUNT"), k}, g.keys(0, 2)...)...)
	case 6:
		return one(nExact, cat([]string{g.name("PFMERGE"), k}, g.keys(0, 3)...)...)
	case 7, 8:
		sub := g.pick("ENCODING", "DECODE", "TODENSE", "decode", "encoding")
		if g.chance(0.1) {
			sub = g.pick("GETREG", "bogus")
		}
		return one(nExact, g.name("PFDEBUG"), sub, k)
	case 9, 10:
		return one(nExact, g.name("GET"), k)
	}
	switch x := g.r.Float64(); {
	case x < 0.5:
		return one(nExact, g.name("PFCOUNT"), k)
	case x < 0.8:
		return one(nExact, g.name("DEL"), k) // a corrupt value stays until it is replaced
	}
	// a value that looks like an HLL: valid, short of registers, or of a bad encoding
	return one(nExact, "SET", k, g.pick(
		"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff",
		"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xfe",
		"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x40\x00\x7f\xfe",
		"HYLL\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00",
		"HYLL\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff"))
}

// cachedScripts are the scripts SCRIPT LOAD and EVALSHA draw.
var cachedScripts = []string{
	"return redis.call('incr', KEYS[1])",
	"return {KEYS[1], ARGV[1], redis.pcall('get', KEYS[1])}",
	"return redis.call('type', KEYS[1])['ok']",
}

// fScripts draws Lua scripts. Most run a command another family drew, through
// redis.call or redis.pcall, so that every command's reply is also compared after its
// round trip through Lua; the rest are conversions, errors and the script cache.
// diffLibraries are the function libraries the corpus loads (FUNCTION LOAD). Only onelib
// is listed with FUNCTION LIST: Redis lists a library's functions in its hash table's
// order, nanokv by name.
var diffLibraries = []string{
	"#!lua name=kvlib\n" +
		"redis.register_function('kset', function(keys, args) redis.call('set', keys[1], args[1]) return redis.call('get', keys[1]) end)\n" +
		"redis.register_function{function_name='kget', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}}\n" +
		"redis.register_function('kinc', function(keys) return redis.call('incr', keys[1]) end)",
	"#!lua name=onelib\nredis.register_function{function_name='one', callback=function(keys, args) return {#keys, #args, keys[1], args[1]} end, flags={'no-writes', 'allow-stale'}, description='counts'}",
	"#!lua name=onelib\nredis.register_function('one', function(keys, args) return redis.call('type', keys[1]) end)",
	"#!lua name=badlib\nredis.register_function('kset', function() return 1 end)", // kvlib's name
	"#!lua name=badlib\nredis.register_function{function_name='x', callback=function() end, flags={'nope'}}",
	"#!lua name=badlib\n",
	"#!lua name=bad-lib\nredis.register_function('x', function() end)",
	"#!lua\nredis.register_function('x', function() end)",
	"return 1",
}

func (g *gen) fScripts() []item {
	switch g.r.Intn(12) {
	case 0, 1, 2, 3, 4:
		it := g.scriptInner()
		fn := g.pick("call", "pcall")
		it.args = cat([]string{g.name("EVAL"), "return redis." + fn + "(unpack(ARGV))", "0"}, it.args...)
		return []item{it}
	case 5:
		return one(nExact, g.name("EVAL"), g.pick(
			"return {1, 2.9, -2.9, 'a', true, false, {3, {4}}, nil, 5}",
			"return {ok='fine'}", "return {err='CUSTOM failure'}", "return redis.status_reply('X')",
			"return redis.error_reply('ERR bad')", "return {1, {err='nested'}}",
			"return {KEYS, ARGV}", "return #ARGV + #KEYS", "return redis.sha1hex(ARGV[1] or '')",
			"local ok, e = pcall(function() redis.call('incr', KEYS[1]) end) return {tostring(ok), e}",
			"return redis.call('exists', KEYS[1]) == 1 and redis.call('type', KEYS[1]) or false",
			"redis.call('select', '2') return redis.call('dbsize')",
			"return cjson.encode({KEYS[1], ARGV[1], 1.5, true, {x = ARGV[1]}})",
			"return cjson.decode(ARGV[1])", "return bit.bxor(tonumber(ARGV[1]) or 0, 0xff)",
			// (+ 0.5: gopher-lua turns an arithmetic -0 into 0, README)
			"redis.call('set', KEYS[1], (tonumber(ARGV[1]) or 0) / 3 + 0.5) return redis.call('get', KEYS[1])",
		), "1", g.key(), g.value())
	case 6:
		return one(nExact, g.name("EVAL"), g.pick(
			"return redis.call('nosuch')", "return redis.call('get')", "return redis.call()",
			"return redis.call('multi')", "return x", "y = 1", "error('boom')",
			"error({err='MINE here'})", "local a = 1\nreturn redis.call('incr', 'x', 'y')",
			"return redis.call('set', KEYS[1], {})",
			"#!lua flags=no-writes\nreturn redis.call('set', KEYS[1], 'x')", "#!lua\nreturn redis.call('incr', KEYS[1])",
			"#!lua flags=no-writes,allow-stale\nreturn redis.call('get', KEYS[1])", "#!lua flags=nope\nreturn 1",
		), g.pick("0", "1", "-1", "x", "9"), g.key())
	case 7:
		body := cachedScripts[g.r.Intn(len(cachedScripts))]
		if g.chance(0.4) {
			return one(nExact, g.name("SCRIPT"), "LOAD", body)
		}
		return one(nExact, g.name("EVALSHA"), sha1Hex(body), "1", g.key(), g.value())
	case 8:
		if g.chance(0.1) {
			return one(nExact, g.name("SCRIPT"), "FLUSH")
		}
		return one(nExact, g.name("SCRIPT"), "EXISTS", sha1Hex(cachedScripts[0]), sha1Hex(cachedScripts[1]), "ffff")
	case 10:
		switch x := g.r.Intn(40); {
		case x == 0:
			return one(nExact, g.name("FUNCTION"), g.name("FLUSH"))
		case x == 1:
			return one(nExact, g.name("FUNCTION"), g.name("DELETE"), g.pick("kvlib", "onelib", "nosuch"))
		case x < 4:
			return one(nExact, g.name("FUNCTION"), g.name("LIST"), g.name("LIBRARYNAME"), g.pick("onelib", "one*", "ONE?IB", "x"))
		case x == 4:
			return one(nExact, g.name("FUNCTION"), g.name("STATS"))
		case x == 5:
			return one(nKind, g.name("FUNCTION"), g.name("DUMP")) // LZF and order differ
		}
		args := []string{g.name("FUNCTION"), g.name("LOAD")}
		if g.chance(0.3) {
			args = append(args, g.name("REPLACE"))
		}
		lib := diffLibraries[g.r.Intn(len(diffLibraries))]
		if g.chance(0.6) { // mostly the good ones, so that FCALL finds them
			lib = diffLibraries[g.r.Intn(3)]
		}
		return one(nExact, append(args, lib)...)
	case 11:
		cmd, fn := g.name("FCALL"), g.pick("kset", "kget", "kinc", "one", "nosuch")
		if g.chance(0.3) {
			cmd = g.name("FCALL_RO")
		}
		return one(nExact, cmd, fn, g.pick("1", "1", "1", "0", "2", "x", "-1"), g.key(), g.value())
	default:
		return one(nExact, g.name("EVAL_RO"), g.pick(
			"return redis.call('get', KEYS[1])", "return redis.pcall('type', KEYS[1])",
			"return redis.call('set', KEYS[1], 'v')", "return redis.call('exists', KEYS[1])",
			"#!lua\nreturn redis.call('exists', KEYS[1])", "#!lua flags=no-writes\nreturn redis.call('exists', KEYS[1])",
		), "1", g.key())
	}
}

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

func (g *gen) fGeo() []item {
	k := g.key()
	switch g.r.Intn(14) {
	case 0, 1, 2, 3:
		args := []string{g.name("GEOADD"), k}
		if g.chance(0.3) {
			args = append(args, g.name(g.pick("NX", "XX", "CH", "CH")))
		}
		for n := 1 + g.r.Intn(3); n > 0; n-- {
			m := g.member()
			lon, lat := g.geoPos(m)
			if g.chance(0.04) {
				lon, lat = g.pick("181", "x", "-180.01"), g.pick("86", "-85.06", "1e400")
			}
			args = append(args, lon, lat, m)
		}
		if g.chance(0.03) {
			args = args[:len(args)-1]
		}
		return one(nExact, args...)
	case 4:
		return one(nExact, cat([]string{g.name("GEOPOS"), k}, g.members(0, 3)...)...)
	case 5:
		args := []string{g.name("GEODIST"), k, g.member(), g.member()}
		if g.chance(0.6) {
			args = append(args, g.geoUnit())
		}
		return one(nExact, args...)
	case 6:
		return one(nExact, cat([]string{g.name("GEOHASH"), k}, g.members(0, 3)...)...)
	case 7:
		cmd, store := g.pick("GEORADIUS", "GEORADIUS", "GEORADIUS_RO"), ""
		if cmd == "GEORADIUS" && g.chance(0.3) {
			store = "STORE"
		}
		args := cat([]string{g.name(cmd), k}, g.geoCenter()...)
		args = append(args, g.geoRadius()...)
		return one(nExact, append(args, g.geoOptions(store)...)...)
	case 8:
		cmd, store := g.pick("GEORADIUSBYMEMBER", "GEORADIUSBYMEMBER", "GEORADIUSBYMEMBER_RO"), ""
		if cmd == "GEORADIUSBYMEMBER" && g.chance(0.3) {
			store = "STORE"
		}
		args := append([]string{g.name(cmd), k, g.member()}, g.geoRadius()...)
		return one(nExact, append(args, g.geoOptions(store)...)...)
	case 9, 10, 11, 12:
		var parts [][]string
		if g.chance(0.5) {
			parts = append(parts, []string{g.name("FROMMEMBER"), g.member()})
		} else {
			parts = append(parts, cat([]string{g.name("FROMLONLAT")}, g.geoCenter()...))
		}
		if g.chance(0.5) {
			parts = append(parts, cat([]string{g.name("BYRADIUS")}, g.geoRadius()...))
		} else {
			w, h := g.pick("10", "100", "300", "600", "2000"), g.pick("10", "100", "300", "600", "2000")
			if g.chance(0.04) {
				w = g.pick("-1", "x")
			}
			parts = append(parts, []string{g.name("BYBOX"), w, h, g.geoUnit()})
		}
		if g.chance(0.04) {
			parts = parts[:1] // FROM without BY, or the reverse
		}
		if g.r.Intn(3) == 0 {
			args := []string{g.name("GEOSEARCHSTORE"), g.key(), k}
			return one(nExact, append(args, append(g.shuffle(parts), g.geoOptions("")...)...)...)
		}
		args := []string{g.name("GEOSEARCH"), k}
		return one(nExact, append(args, append(g.shuffle(parts), g.geoOptions("")...)...)...)
	default:
		return one(nExact, g.name("ZRANGE"), k, "0", "-1", g.name("WITHSCORES"))
	}
}

func (g *gen) setArgs(k string) []string {
	var opts [][]string
	switch g.r.Intn(4) {
	case 1:
		opts = append(opts, []string{g.name("NX")})
	case 2:
		opts = append(opts, []string{g.name("XX")})
	}
	if g.chance(0.3) {
		opts = append(opts, []string{g.name("GET")})
	}
	switch g.r.Intn(6) {
	case 1, 2:
		opts = append(opts, g.expiryOpt())
	case 3:
		opts = append(opts, []string{g.name("KEEPTTL")})
	}
	if g.chance(0.1) {
		bad := [][]string{
			{"NX", "XX"}, {"EX", "0"}, {"EX", "-3"}, {"EX", "abc"}, {"PX", "0"},
			{"EX", "100000", "PX", "100000000"}, {"KEEPTTL", "EX", "100000"}, {"FOO"}, {"EX"},
			{"EX", "9223372036854775807"}, {"PX", "9223372036854775807"},
			{"EXAT", "0"}, {"GET", "GET"}, {"NX", "NX"}, {"EX", "1.5"}, {"KEEPTTL", "KEEPTTL"},
		}
		opts = append(opts, bad[g.r.Intn(len(bad))])
	}
	return append([]string{g.name("SET"), k, g.value()}, g.shuffle(opts)...)
}

func (g *gen) getexArgs(k string) []string {
	args := []string{g.name("GETEX"), k}
	switch g.r.Intn(8) {
	case 0, 1:
	case 2:
		args = append(args, g.name("PERSIST"))
	case 3:
		bad := [][]string{{"EX", "0"}, {"EX", "abc"}, {"PERSIST", "EX", "100000"}, {"FOO"}, {"EX"},
			{"EXAT", "1"}, {"PX", "-5"}, {"EX", "100000", "EX", "200000"}, {"PERSIST", "PERSIST"}}
		args = append(args, bad[g.r.Intn(len(bad))]...)
	default:
		args = append(args, g.expiryOpt()...)
	}
	return args
}

// --- keys ----------------------------------------------------------------------------------

func (g *gen) db() string {
	if g.chance(0.06) {
		return g.pick("16", "-1", "abc", "1.0")
	}
	if g.chance(0.5) {
		return strconv.Itoa(g.dbs[0])
	}
	return strconv.Itoa(g.dbs[g.r.Intn(len(g.dbs))])
}

func (g *gen) dbNum(s string) []int {
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 || v > 15 {
		return nil
	}
	return []int{v}
}

func (g *gen) fKeys() []item {
	k := g.key()
	switch g.r.Intn(36) {
	case 0, 1:
		return one(nExact, cat([]string{g.name("DEL")}, g.keys(1, 3)...)...)
	case 2:
		return one(nExact, cat([]string{g.name("UNLINK")}, g.keys(1, 3)...)...)
	case 3, 4:
		return one(nExact, cat([]string{g.name("EXISTS")}, g.keys(1, 3)...)...)
	case 5, 6:
		return one(nExact, g.name("TYPE"), k)
	case 7, 8, 9:
		return one(nExact, g.expireArgs(k)...)
	case 10, 11:
		return one(nTTL, g.name(g.pick("TTL", "PTTL")), k)
	case 12:
		return one(nTTL, g.name(g.pick("EXPIRETIME", "PEXPIRETIME")), k)
	case 13:
		return one(nExact, g.name("PERSIST"), k)
	case 14, 15:
		dst := g.key()
		if g.chance(0.1) {
			dst = k
		}
		return one(nExact, g.name(g.pick("RENAME", "RENAMENX")), k, dst)
	case 16, 17:
		dst := g.key()
		if g.chance(0.1) {
			dst = k
		}
		args := []string{g.name("COPY"), k, dst}
		it := item{norm: nExact}
		var opts [][]string
		if g.chance(0.4) {
			d := g.db()
			opts = append(opts, []string{g.name("DB"), d})
			it.extraDBs = g.dbNum(d)
		}
		if g.chance(0.4) {
			opts = append(opts, []string{g.name("REPLACE")})
		}
		if g.chance(0.05) {
			opts = append(opts, []string{g.pick("FOO", "DB")})
		}
		it.args = append(args, g.shuffle(opts)...)
		return []item{it}
	case 18:
		d := g.db()
		it := mk(nExact, g.name("MOVE"), k, d)
		it.extraDBs = g.dbNum(d)
		return []item{it}
	case 19:
		return one(nExact, g.name("DBSIZE"))
	case 20:
		return one(nExact, cat([]string{g.name("TOUCH")}, g.keys(1, 3)...)...)
	case 21:
		return one(nExact, g.name("SELECT"), g.db())
	case 22:
		return one(nSet, g.name("KEYS"), g.matchPattern(true))
	case 23:
		args := []string{g.name("SCAN"), "0"}
		var opts [][]string
		if g.chance(0.4) {
			opts = append(opts, []string{g.name("MATCH"), g.matchPattern(true)})
		}
		if g.chance(0.4) {
			opts = append(opts, []string{g.name("COUNT"), g.pick("1", "2", "5", "100")})
		}
		if g.chance(0.3) {
			opts = append(opts, []string{g.name("TYPE"), g.pick("string", "list", "hash", "set", "zset", "STRING", "foo")})
		}
		it := mk(nExact, append(args, g.shuffle(opts)...)...)
		it.scan = 1
		it.noTx = true
		if g.chance(0.05) { // malformed: compared as a single call
			bad := [][]string{{"0", "COUNT", "0"}, {"0", "COUNT", "abc"}, {"0", "COUNT", "-1"}, {"0", "FOO", "1"},
				{"0", "MATCH"}, {"abc"}, {"-1", "COUNT", "x"}, {"0", "TYPE"}}
			it = mk(nExact, cat([]string{g.name("SCAN")}, bad[g.r.Intn(len(bad))]...)...)
			it.noTx = true
		}
		return []item{it}
	case 24:
		it := mk(nRandom, g.name("RANDOMKEY"))
		it.universe = []string{"KEYS", "*"}
		return []item{it}
	case 25, 26:
		return one(nExact, g.sortArgs(k)...)
	case 27:
		if g.r.Intn(6) == 0 {
			it := mk(nExact, g.name("SWAPDB"), strconv.Itoa(g.dbs[0]), strconv.Itoa(g.dbs[1+g.r.Intn(len(g.dbs)-1)]))
			it.flushOnMismatch = true
			return []item{it}
		}
		return one(nExact, g.name("DBSIZE"))
	case 28:
		if g.r.Intn(10) == 0 {
			it := mk(nExact, g.name("FLUSHDB"))
			it.flushOnMismatch = true
			return []item{it}
		}
		return one(nExact, g.name("EXISTS"), k)
	case 29:
		return one(nExact, g.name("TYPE"), k)
	case 30:
		// the payload's bytes differ by design (Redis writes compact encodings, nanokv
		// plain ones, both loadable by either): its kind is compared
		return one(nKind, g.name("DUMP"), k)
	case 31:
		return one(nExact, g.restoreArgs(k)...)
	case 32:
		return one(nExact, g.objectArgs(k)...)
	case 33:
		if g.chance(0.1) {
			return g.growPast(k)
		}
		return one(nExact, g.name("OBJECT"), g.name("ENCODING"), k)
	default:
		return one(nExact, g.expireArgs(k)...)
	}
}

// objectArgs is OBJECT ENCODING or REFCOUNT of k, now and then another subcommand or a
// malformed call. (IDLETIME counts seconds, which two servers need not agree on.)
func (g *gen) objectArgs(k string) []string {
	switch x := g.r.Intn(40); {
	case x == 0:
		return []string{g.name("OBJECT"), g.name("HELP")}
	case x == 1:
		return []string{g.name("OBJECT"), g.name("FREQ"), k}
	case x == 2:
		return []string{g.name("OBJECT"), g.pick("FOO", "ENCODING", "REFCOUNT")}
	case x == 3:
		return []string{g.name("OBJECT"), g.name("ENCODING"), k, k}
	case x == 4:
		return []string{g.name("OBJECT")}
	}
	return []string{g.name("OBJECT"), g.name(g.pick("ENCODING", "REFCOUNT")), k}
}

// growPast adds to k, of whatever type, as many elements as take a collection past its
// compact encoding in Redis (an intset past 512 members, a listpack hash past 512
// fields, a listpack sorted set past 128 members), and asks for the encoding.
func (g *gen) growPast(k string) []item {
	var args []string
	switch g.r.Intn(3) {
	case 0:
		args = []string{"SADD", k}
		for i := 0; i < 513; i++ {
			args = append(args, strconv.Itoa(i))
		}
	case 1:
		args = []string{"HSET", k}
		for i := 0; i < 513; i++ {
			args = append(args, "f"+strconv.Itoa(i), "v")
		}
	default:
		args = []string{"ZADD", k}
		for i := 0; i < 129; i++ {
			args = append(args, strconv.Itoa(i), "z"+strconv.Itoa(i))
		}
	}
	return []item{mk(nExact, args...), mk(nExact, "OBJECT", "ENCODING", k)}
}

func (g *gen) expireArgs(k string) []string {
	cmd := g.pick("EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT")
	t := int64(g.ttl())
	var v string
	switch cmd {
	case "EXPIRE":
		v = itoa(t)
	case "PEXPIRE":
		v = itoa(t * 1000)
	case "EXPIREAT":
		v = itoa(g.now() + t)
	default:
		v = itoa((g.now() + t) * 1000)
	}
	switch x := g.r.Float64(); {
	case x < 0.1: // already past: deletes the key
		v = map[string]string{"EXPIRE": g.pick("0", "-5"), "PEXPIRE": g.pick("0", "-1000"), "EXPIREAT": "1", "PEXPIREAT": "1000"}[cmd]
	case x < 0.15:
		v = g.pick("abc", "1.5", "9223372036854775807", "-9223372036854775808", "")
	}
	args := []string{g.name(cmd), k, v}
	if g.chance(0.5) {
		args = append(args, g.name(g.pick("NX", "XX", "GT", "LT")))
	}
	if g.chance(0.05) {
		args = append(args, g.pick("NX", "XX", "GT", "LT", "FOO"))
	}
	return args
}

func (g *gen) sortArgs(k string) []string {
	ro := g.chance(0.3)
	args := []string{g.name("SORT"), k}
	if ro {
		args[0] = g.name("SORT_RO")
	}
	var opts [][]string
	if g.chance(0.3) {
		opts = append(opts, []string{g.name("LIMIT"), g.pick("0", "1", "-1", "2"), g.pick("1", "2", "5", "-1", "0")})
	}
	if g.chance(0.4) {
		opts = append(opts, []string{g.name(g.pick("ASC", "DESC"))})
	}
	if g.chance(0.6) {
		opts = append(opts, []string{g.name("ALPHA")})
	}
	if !ro && g.chance(0.2) {
		opts = append(opts, []string{g.name("STORE"), g.key()})
	}
	if g.chance(0.04) {
		opts = append(opts, []string{g.pick("FOO", "LIMIT")})
	}
	return append(args, g.shuffle(opts)...)
}

// --- hashes --------------------------------------------------------------------------------

func (g *gen) fHashes() []item {
	k := g.key()
	switch g.r.Intn(23) {
	case 0, 1, 2:
		args := []string{g.name("HSET"), k}
		for i := 0; i < 1+g.r.Intn(3); i++ {
			args = append(args, g.member(), g.value())
		}
		if g.chance(0.05) {
			args = args[:len(args)-1]
		}
		return one(nExact, args...)
	case 3:
		return one(nExact, g.name("HSETNX"), k, g.member(), g.value())
	case 4:
		args := []string{g.name("HMSET"), k}
		for i := 0; i < 1+g.r.Intn(3); i++ {
			args = append(args, g.member(), g.value())
		}
		return one(nExact, args...)
	case 5, 6:
		return one(nExact, g.name("HGET"), k, g.member())
	case 7:
		return one(nExact, cat([]string{g.name("HMGET"), k}, g.members(1, 4)...)...)
	case 8:
		return one(nExact, cat([]string{g.name("HDEL"), k}, g.members(1, 3)...)...)
	case 9:
		return one(nExact, g.name("HLEN"), k)
	case 10:
		return one(nExact, g.name("HEXISTS"), k, g.member())
	case 11:
		return one(nSet, g.name("HKEYS"), k)
	case 12:
		return one(nSet, g.name("HVALS"), k)
	case 13, 14:
		return one(nPairs, g.name("HGETALL"), k)
	case 15:
		return one(nExact, g.name("HINCRBY"), k, g.member(), g.intArg())
	case 16:
		return one(nExact, g.name("HINCRBYFLOAT"), k, g.member(), g.floatArg())
	case 17:
		return one(nExact, g.name("HSTRLEN"), k, g.member())
	case 18, 19:
		return []item{g.randArgs(k, "HRANDFIELD", "WITHVALUES", []string{"HKEYS", k})}
	case 20:
		args := []string{g.name("HSCAN"), k, "0"}
		var opts [][]string
		if g.chance(0.4) {
			opts = append(opts, []string{g.name("MATCH"), g.matchPattern(false)})
		}
		if g.chance(0.4) {
			opts = append(opts, []string{g.name("COUNT"), g.pick("1", "2", "100")})
		}
		it := mk(nExact, append(args, g.shuffle(opts)...)...)
		it.scan, it.scanPairs, it.noTx = 2, true, true
		return []item{it}
	default:
		return one(nExact, g.name("HSET"), k, g.member(), g.pick("0", "1", "10", "-5", "2.5", "abc", "9223372036854775807"))
	}
}

// randArgs draws SRANDMEMBER/HRANDFIELD/ZRANDMEMBER (cmd) with its normalisation: a
// count covering the whole collection (members are m0..m9) is deterministic up to order.
func (g *gen) randArgs(k, cmd, with string, universe []string) item {
	switch g.r.Intn(7) {
	case 0:
		it := mk(nRandom, g.name(cmd), k)
		it.universe = universe
		return it
	case 1:
		return mk(nSet, g.name(cmd), k, strconv.Itoa(diffMaxCard+g.r.Intn(5)))
	case 2:
		if with == "" {
			return mk(nExact, g.name(cmd), k, "0")
		}
		return mk(nPairs, g.name(cmd), k, strconv.Itoa(diffMaxCard+g.r.Intn(5)), g.name(with))
	case 3:
		it := mk(nRandom, g.name(cmd), k, strconv.Itoa(1+g.r.Intn(4)))
		it.universe = universe
		return it
	case 4:
		it := mk(nRandom, g.name(cmd), k, strconv.Itoa(-1-g.r.Intn(4)))
		it.universe = universe
		return it
	case 5:
		if with == "" {
			return mk(nExact, g.name(cmd), k, g.pick("abc", "0"))
		}
		return mk(nRandom, g.name(cmd), k, strconv.Itoa(g.r.Intn(9)-4), g.name(with))
	}
	bad := [][]string{{"abc"}, {"1", "FOO"}, {"1", with, "x"}, {"1.5"}, {"0"}}
	return mk(nExact, cat([]string{g.name(cmd), k}, bad[g.r.Intn(len(bad))]...)...)
}

// --- lists ---------------------------------------------------------------------------------

func (g *gen) fLists() []item {
	k := g.key()
	dir := func() string { return g.name(g.pick("LEFT", "RIGHT")) }
	switch g.r.Intn(26) {
	case 0, 1, 2, 3:
		args := []string{g.name(g.pick("LPUSH", "RPUSH")), k}
		for i := 0; i < 1+g.r.Intn(3); i++ {
			args = append(args, g.elem())
		}
		return one(nExact, args...)
	case 4:
		return one(nExact, g.name(g.pick("LPUSHX", "RPUSHX")), k, g.elem())
	case 5, 6:
		args := []string{g.name(g.pick("LPOP", "RPOP")), k}
		if g.chance(0.5) {
			args = append(args, g.count())
		}
		return one(nExact, args...)
	case 7:
		return one(nExact, g.name("LLEN"), k)
	case 8:
		return one(nExact, g.name("LINDEX"), k, g.idx())
	case 9, 10:
		return one(nExact, g.name("LRANGE"), k, g.idx(), g.idx())
	case 11:
		return one(nExact, g.name("LSET"), k, g.idx(), g.elem())
	case 12:
		where := g.name(g.pick("BEFORE", "AFTER"))
		if g.chance(0.05) {
			where = "MIDDLE"
		}
		return one(nExact, g.name("LINSERT"), k, where, g.elem(), g.elem())
	case 13:
		return one(nExact, g.name("LREM"), k, g.pick("0", "1", "2", "-1", "-2", "abc"), g.elem())
	case 14:
		return one(nExact, g.name("LTRIM"), k, g.idx(), g.idx())
	case 15, 16:
		args := []string{g.name("LPOS"), k, g.elem()}
		var opts [][]string
		if g.chance(0.4) {
			opts = append(opts, []string{g.name("RANK"), g.pick("1", "2", "-1", "-2", "0", "abc")})
		}
		if g.chance(0.4) {
			opts = append(opts, []string{g.name("COUNT"), g.pick("0", "1", "2", "-1")})
		}
		if g.chance(0.3) {
			opts = append(opts, []string{g.name("MAXLEN"), g.pick("0", "1", "3", "-1")})
		}
		if g.chance(0.04) {
			opts = append(opts, []string{"FOO", "1"})
		}
		return one(nExact, append(args, g.shuffle(opts)...)...)
	case 17, 18:
		return one(nExact, g.name("LMOVE"), k, g.key(), dir(), g.pick(dir(), dir(), "UP"))
	case 19:
		return one(nExact, g.name("RPOPLPUSH"), k, g.key())
	case 20, 21:
		keys := g.keys(1, 3)
		nk := strconv.Itoa(len(keys))
		if g.chance(0.06) {
			nk = g.pick("0", "-1", "abc", strconv.Itoa(len(keys)+1))
		}
		args := cat([]string{g.name("LMPOP"), nk}, keys...)
		args = append(args, g.pick(dir(), dir(), dir(), "UP"))
		if g.chance(0.4) {
			args = append(args, g.name("COUNT"), g.pick("1", "2", "5", "0", "-1"))
		}
		return one(nExact, args...)
	case 22:
		// blocking variants with a 10ms timeout: they return at once when data is there,
		// and time out with a null otherwise (inside MULTI they never block)
		switch g.r.Intn(4) {
		case 0:
			return one(nExact, cat(cat([]string{g.name(g.pick("BLPOP", "BRPOP"))}, g.keys(1, 2)...), "0.01")...)
		case 1:
			return one(nExact, g.name("BLMOVE"), k, g.key(), dir(), dir(), "0.01")
		case 2:
			return one(nExact, g.name("BRPOPLPUSH"), k, g.key(), "0.01")
		}
		return one(nExact, cat([]string{g.name("BLMPOP"), "0.01", "1", k, dir()})...)
	default:
		return one(nExact, g.name("LRANGE"), k, "0", "-1")
	}
}

// --- streams -------------------------------------------------------------------------------

// fStreams draws the stream commands with explicit IDs (an automatic one is each
// server's clock), over a small range of milliseconds so that IDs collide, go backwards
// and get trimmed. No "~": nanokv trims exactly where Redis trims whole nodes (README).
func (g *gen) fStreams() []item {
	k := g.key()
	ms := func() string { return strconv.Itoa(g.r.Intn(40)) }
	id := func() string {
		switch x := g.r.Float64(); {
		case x < 0.6:
			return ms() + "-" + strconv.Itoa(g.r.Intn(4))
		case x < 0.9:
			return ms()
		}
		return g.pick("0-0", "-", "+", "abc", "1-x", "+3", "5-", "18446744073709551615-18446744073709551615", "(5")
	}
	bound := func(low bool) string {
		switch x := g.r.Float64(); {
		case x < 0.3 && low:
			return "-"
		case x < 0.3:
			return "+"
		case x < 0.5:
			return "(" + id()
		}
		return id()
	}
	trim := func() []string {
		if g.chance(0.5) {
			return []string{g.name("MAXLEN"), g.pick("0", "1", "3", "5", "-1", "x")}
		}
		return []string{g.name("MINID"), id()}
	}
	switch g.r.Intn(24) {
	case 0, 1, 2, 3, 4:
		args := []string{g.name("XADD"), k}
		if g.chance(0.1) {
			args = append(args, g.name("NOMKSTREAM"))
		}
		if g.chance(0.2) {
			t := trim()
			if g.chance(0.3) {
				t = []string{t[0], "=", t[1]}
			}
			args = append(args, t...)
			if g.chance(0.1) {
				args = append(args, g.name("LIMIT"), g.pick("0", "5"))
			}
		}
		switch x := g.r.Float64(); {
		case x < 0.3:
			args = append(args, ms()+"-*")
		default:
			args = append(args, id())
		}
		for range 1 + g.r.Intn(3) {
			args = append(args, g.pick("f", "g", "name", ""), g.value())
		}
		if g.chance(0.05) {
			args = args[:len(args)-1] // a field without its value
		}
		return one(nExact, args...)
	case 5:
		return one(nExact, g.name("XLEN"), k)
	case 6, 7, 8:
		cmd, a, b := g.name("XRANGE"), bound(true), bound(false)
		if g.chance(0.4) {
			cmd, a, b = g.name("XREVRANGE"), bound(false), bound(true)
		}
		args := []string{cmd, k, a, b}
		if g.chance(0.4) {
			args = append(args, g.name("COUNT"), g.count())
		}
		return one(nExact, args...)
	case 9:
		return one(nExact, cat([]string{g.name("XDEL"), k}, id(), id())[:3+g.r.Intn(2)]...)
	case 10:
		return one(nExact, cat([]string{g.name("XTRIM"), k}, trim()...)...)
	case 11, 12:
		keys := g.keys(1, 2)
		args := []string{g.name("XREAD")}
		if g.chance(0.4) {
			args = append(args, g.name("COUNT"), g.count())
		}
		args = append(args, g.name("STREAMS"))
		args = append(args, keys...)
		for range keys {
			args = append(args, g.pick(id(), "0", "$", "0-0", "10"))
		}
		if g.chance(0.05) {
			args = args[:len(args)-1]
		}
		return one(nExact, args...)
	case 13:
		args := []string{g.name("XSETID"), k, id()}
		if g.chance(0.3) {
			args = append(args, g.name("ENTRIESADDED"), g.pick("0", "3", "100", "-1"))
		}
		if g.chance(0.3) {
			args = append(args, g.name("MAXDELETEDID"), id())
		}
		return one(nExact, args...)
	case 14:
		// not FULL: it shows delivery and seen times, each server's clock
		if g.chance(0.5) {
			return one(nExact, g.name("XINFO"), g.name("GROUPS"), k)
		}
		return one(nExact, g.name("XINFO"), g.name("STREAM"), k)
	}
	// consumer groups, with a minimum idle time of 0 (the rest depends on the clocks)
	grp := func() string { return g.pick("g1", "g1", "g2", "nog") }
	consumer := func() string { return g.pick("alice", "bob", "carol") }
	ids := func() []string {
		out := []string{id()}
		for g.chance(0.5) {
			out = append(out, id())
		}
		return out
	}
	switch g.r.Intn(9) {
	case 0, 1:
		switch g.r.Intn(5) {
		case 0, 1:
			args := []string{g.name("XGROUP"), g.name("CREATE"), k, grp(), g.pick("0", "$", id())}
			if g.chance(0.3) {
				args = append(args, g.name("MKSTREAM"))
			}
			if g.chance(0.2) {
				args = append(args, g.name("ENTRIESREAD"), g.pick("0", "3", "-1", "-2"))
			}
			return one(nExact, args...)
		case 2:
			args := []string{g.name("XGROUP"), g.name("SETID"), k, grp(), g.pick("0", "$", "-", "+", id())}
			if g.chance(0.3) {
				args = append(args, g.name("ENTRIESREAD"), g.pick("0", "5", "-1"))
			}
			return one(nExact, args...)
		case 3:
			return one(nExact, g.name("XGROUP"), g.name(g.pick("CREATECONSUMER", "DELCONSUMER")), k, grp(), consumer())
		}
		return one(nExact, g.name("XGROUP"), g.name("DESTROY"), k, grp())
	case 2, 3:
		args := []string{g.name("XREADGROUP"), g.name("GROUP"), grp(), consumer()}
		if g.chance(0.4) {
			args = append(args, g.name("COUNT"), g.count())
		}
		if g.chance(0.2) {
			args = append(args, g.name("NOACK"))
		}
		return one(nExact, append(args, g.name("STREAMS"), k, g.pick(">", ">", "0", id()))...)
	case 4:
		return one(nExact, cat([]string{g.name("XACK"), k, grp()}, ids()...)...)
	case 5:
		return one(nExact, g.name("XPENDING"), k, grp())
	case 6:
		args := cat([]string{g.name("XCLAIM"), k, grp(), consumer(), "0"}, ids()...)
		for _, opt := range [][]string{{"JUSTID"}, {"FORCE"}, {"RETRYCOUNT", "3"}, {"LASTID", id()}, {"IDLE", "5"}} {
			if g.chance(0.25) {
				args = append(args, opt...)
			}
		}
		return one(nExact, args...)
	case 7:
		args := []string{g.name("XAUTOCLAIM"), k, grp(), consumer(), "0", g.pick("0", "-", id())}
		if g.chance(0.4) {
			args = append(args, g.name("COUNT"), g.pick("1", "2", "0"))
		}
		if g.chance(0.5) {
			args = append(args, g.name("JUSTID"))
		}
		return one(nExact, args...)
	}
	return one(nExact, g.name("XRANGE"), k, "-", "+")
}

// --- sets ----------------------------------------------------------------------------------

func (g *gen) fSets() []item {
	k := g.key()
	switch g.r.Intn(22) {
	case 0, 1, 2, 3:
		args := []string{g.name("SADD"), k}
		for i := 0; i < 1+g.r.Intn(4); i++ {
			args = append(args, g.setMember())
		}
		return one(nExact, args...)
	case 4:
		return one(nExact, cat([]string{g.name("SREM"), k}, g.members(1, 3)...)...)
	case 5, 6:
		return one(nSet, g.name("SMEMBERS"), k)
	case 7:
		return one(nExact, g.name("SISMEMBER"), k, g.member())
	case 8:
		return one(nExact, cat([]string{g.name("SMISMEMBER"), k}, g.members(1, 3)...)...)
	case 9:
		return one(nExact, g.name("SCARD"), k)
	case 10:
		// SPOP removes random members: unless it removes all of them, the two servers
		// keep different members, so the key is deleted on both right after.
		switch g.r.Intn(4) {
		case 0:
			return one(nSet, g.name("SPOP"), k, strconv.Itoa(diffMaxCard+g.r.Intn(3)))
		case 1:
			return one(nExact, g.name("SPOP"), k, g.pick("0", "-1", "abc"))
		}
		args := []string{g.name("SPOP"), k}
		if g.chance(0.5) {
			args = append(args, strconv.Itoa(1+g.r.Intn(3)))
		}
		return []item{mk(nRandom, args...), mk(nExact, "DEL", k)}
	case 11:
		return []item{g.randArgs(k, "SRANDMEMBER", "", []string{"SMEMBERS", k})}
	case 12:
		return one(nExact, g.name("SMOVE"), k, g.key(), g.setMember())
	case 13, 14:
		return one(nSet, cat([]string{g.name(g.pick("SINTER", "SUNION", "SDIFF"))}, g.keys(1, 3)...)...)
	case 15, 16:
		return one(nExact, cat([]string{g.name(g.pick("SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE")), k}, g.keys(1, 3)...)...)
	case 17:
		keys := g.keys(1, 3)
		nk := strconv.Itoa(len(keys))
		if g.chance(0.06) {
			nk = g.pick("0", "-1", "abc", strconv.Itoa(len(keys)+1))
		}
		args := cat([]string{g.name("SINTERCARD"), nk}, keys...)
		if g.chance(0.4) {
			args = append(args, g.name("LIMIT"), g.pick("0", "1", "2", "-1", "abc"))
		}
		return one(nExact, args...)
	case 18:
		args := []string{g.name("SSCAN"), k, "0"}
		var opts [][]string
		if g.chance(0.4) {
			opts = append(opts, []string{g.name("MATCH"), g.matchPattern(false)})
		}
		if g.chance(0.4) {
			opts = append(opts, []string{g.name("COUNT"), g.pick("1", "2", "100")})
		}
		it := mk(nExact, append(args, g.shuffle(opts)...)...)
		it.scan, it.noTx = 2, true
		return []item{it}
	default:
		return one(nExact, cat([]string{g.name("SADD"), k}, g.members(1, 2)...)...)
	}
}

// --- sorted sets ---------------------------------------------------------------------------

func lexItem(args []string, keys ...string) []item {
	it := mk(nExact, args...)
	it.lexKeys = keys
	it.noTx = true
	return []item{it}
}

func (g *gen) fZsets() []item {
	k := g.key()
	switch g.r.Intn(42) {
	case 0, 1, 2, 3, 4:
		return one(nExact, g.zaddArgs(k)...)
	case 5:
		return one(nExact, g.name("ZINCRBY"), k, g.score(), g.member())
	case 6, 7:
		return one(nExact, g.name("ZSCORE"), k, g.member())
	case 8:
		return one(nExact, cat([]string{g.name("ZMSCORE"), k}, g.members(1, 3)...)...)
	case 9:
		return one(nExact, g.name("ZCARD"), k)
	case 10:
		return one(nExact, g.name("ZCOUNT"), k, g.scoreRange(), g.scoreRange())
	case 11:
		return lexItem([]string{g.name("ZLEXCOUNT"), k, g.lexRange(), g.lexRange()}, k)
	case 12, 13, 14, 15:
		args, lex := g.zrangeArgs([]string{g.name("ZRANGE"), k}, true)
		if lex {
			return lexItem(args, k)
		}
		return one(nExact, args...)
	case 16:
		args, lex := g.zrangeArgs([]string{g.name("ZRANGESTORE"), g.key(), k}, false)
		if lex {
			return lexItem(args, k)
		}
		return one(nExact, args...)
	case 17, 18:
		cmd := g.pick("ZRANGEBYSCORE", "ZREVRANGEBYSCORE")
		args := []string{g.name(cmd), k, g.scoreRange(), g.scoreRange()}
		var opts [][]string
		if g.chance(0.4) {
			opts = append(opts, []string{g.name("WITHSCORES")})
		}
		if g.chance(0.3) {
			opts = append(opts, []string{g.name("LIMIT"), g.pick("0", "1", "2", "-1"), g.pick("1", "2", "-1", "0")})
		}
		return one(nExact, append(args, g.shuffle(opts)...)...)
	case 19:
		args := []string{g.name(g.pick("ZRANGEBYLEX", "ZREVRANGEBYLEX")), k, g.lexRange(), g.lexRange()}
		if g.chance(0.3) {
			args = append(args, g.name("LIMIT"), g.pick("0", "1", "-1"), g.pick("1", "2", "-1"))
		}
		return lexItem(args, k)
	case 20:
		args := []string{g.name("ZREVRANGE"), k, g.idx(), g.idx()}
		if g.chance(0.4) {
			args = append(args, g.name("WITHSCORES"))
		}
		return one(nExact, args...)
	case 21, 22:
		return one(nExact, g.name(g.pick("ZRANK", "ZREVRANK")), k, g.member())
	case 23:
		return one(nExact, cat([]string{g.name("ZREM"), k}, g.members(1, 3)...)...)
	case 24:
		return one(nExact, g.name("ZREMRANGEBYRANK"), k, g.idx(), g.idx())
	case 25:
		return one(nExact, g.name("ZREMRANGEBYSCORE"), k, g.scoreRange(), g.scoreRange())
	case 26:
		return lexItem([]string{g.name("ZREMRANGEBYLEX"), k, g.lexRange(), g.lexRange()}, k)
	case 27, 28:
		args := []string{g.name(g.pick("ZPOPMIN", "ZPOPMAX")), k}
		if g.chance(0.5) {
			args = append(args, g.count())
		}
		return one(nExact, args...)
	case 29:
		keys := g.keys(1, 3)
		nk := strconv.Itoa(len(keys))
		if g.chance(0.06) {
			nk = g.pick("0", "-1", "abc", strconv.Itoa(len(keys)+1))
		}
		args := cat([]string{g.name("ZMPOP"), nk}, keys...)
		args = append(args, g.name(g.pick("MIN", "MAX", "MIN", "MAX", "UP")))
		if g.chance(0.4) {
			args = append(args, g.name("COUNT"), g.pick("1", "2", "5", "0", "-1"))
		}
		return one(nExact, args...)
	case 30:
		switch g.r.Intn(2) {
		case 0:
			return one(nExact, cat(cat([]string{g.name(g.pick("BZPOPMIN", "BZPOPMAX"))}, g.keys(1, 2)...), "0.01")...)
		}
		return one(nExact, g.name("BZMPOP"), "0.01", "1", k, g.name(g.pick("MIN", "MAX")))
	case 31, 32, 33, 34:
		return one(nExact, g.zsetOpArgs()...)
	case 35:
		keys := g.keys(1, 3)
		nk := strconv.Itoa(len(keys))
		if g.chance(0.06) {
			nk = g.pick("0", "-1", "abc", strconv.Itoa(len(keys)+1))
		}
		args := cat([]string{g.name("ZINTERCARD"), nk}, keys...)
		if g.chance(0.4) {
			args = append(args, g.name("LIMIT"), g.pick("0", "1", "2", "-1"))
		}
		return one(nExact, args...)
	case 36:
		return []item{g.randArgs(k, "ZRANDMEMBER", "WITHSCORES", []string{"ZRANGE", k, "0", "-1"})}
	case 37:
		args := []string{g.name("ZSCAN"), k, "0"}
		var opts [][]string
		if g.chance(0.4) {
			opts = append(opts, []string{g.name("MATCH"), g.matchPattern(false)})
		}
		if g.chance(0.4) {
			opts = append(opts, []string{g.name("COUNT"), g.pick("1", "2", "100")})
		}
		it := mk(nExact, append(args, g.shuffle(opts)...)...)
		it.scan, it.scanPairs, it.noTx = 2, true, true
		return []item{it}
	default:
		return one(nExact, g.name("ZADD"), k, g.score(), g.member())
	}
}

func (g *gen) zaddArgs(k string) []string {
	var flags []string
	for _, f := range []struct {
		name string
		p    float64
	}{{"NX", 0.12}, {"XX", 0.12}, {"GT", 0.08}, {"LT", 0.08}, {"CH", 0.2}, {"INCR", 0.1}} {
		if g.chance(f.p) {
			flags = append(flags, g.name(f.name))
		}
	}
	g.r.Shuffle(len(flags), func(i, j int) { flags[i], flags[j] = flags[j], flags[i] })
	args := cat([]string{g.name("ZADD"), k}, flags...)
	n := 1 + g.r.Intn(3)
	for _, f := range flags {
		if strings.EqualFold(f, "INCR") && g.chance(0.85) {
			n = 1
		}
	}
	for i := 0; i < n; i++ {
		m := g.member()
		if g.chance(0.02) {
			m = bigMember
		}
		args = append(args, g.score(), m)
	}
	if g.chance(0.03) {
		args = args[:len(args)-1]
	}
	if g.chance(0.02) {
		args = append(args, "FOO")
	}
	return args
}

// zrangeArgs appends ZRANGE's range and options (index, BYSCORE or BYLEX; REV; LIMIT;
// WITHSCORES when withScores).
func (g *gen) zrangeArgs(args []string, withScores bool) ([]string, bool) {
	mode := g.r.Intn(3)
	var opts [][]string
	switch mode {
	case 0:
		args = append(args, g.idx(), g.idx())
	case 1:
		args = append(args, g.scoreRange(), g.scoreRange())
		opts = append(opts, []string{g.name("BYSCORE")})
	case 2:
		args = append(args, g.lexRange(), g.lexRange())
		opts = append(opts, []string{g.name("BYLEX")})
	}
	if g.chance(0.3) {
		opts = append(opts, []string{g.name("REV")})
	}
	if (mode != 0 && g.chance(0.35)) || g.chance(0.03) {
		opts = append(opts, []string{g.name("LIMIT"), g.pick("0", "1", "2", "-1"), g.pick("1", "2", "-1", "0")})
	}
	if (withScores && g.chance(0.4)) || g.chance(0.02) {
		opts = append(opts, []string{g.name("WITHSCORES")})
	}
	if g.chance(0.03) {
		opts = append(opts, []string{g.pick("FOO", "BYSCORE", "BYLEX", "LIMIT")})
	}
	return append(args, g.shuffle(opts)...), mode == 2
}

// zsetOpArgs draws ZUNION/ZINTER/ZDIFF[STORE] (sources may be sets: they count as score 1).
func (g *gen) zsetOpArgs() []string {
	op := g.pick("ZUNION", "ZINTER", "ZDIFF")
	store := g.chance(0.5)
	var args []string
	if store {
		args = []string{g.name(op + "STORE"), g.key()}
	} else {
		args = []string{g.name(op)}
	}
	keys := g.keys(1, 3)
	nk := strconv.Itoa(len(keys))
	if g.chance(0.05) {
		nk = g.pick("0", "-1", "abc", strconv.Itoa(len(keys)+1))
	}
	args = append(append(args, nk), keys...)
	var opts [][]string
	if op != "ZDIFF" || g.chance(0.05) {
		if g.chance(0.3) {
			w := []string{g.name("WEIGHTS")}
			for range keys {
				w = append(w, g.pick("1", "2", "0", "-1", "0.5", "3"))
			}
			if g.chance(0.05) {
				w = append(w, g.pick("1", "abc"))
			}
			opts = append(opts, w)
		}
		if g.chance(0.3) {
			opts = append(opts, []string{g.name("AGGREGATE"), g.name(g.pick("SUM", "MIN", "MAX", "SUM", "MIN", "MAX", "FOO"))})
		}
	}
	if !store && g.chance(0.4) || g.chance(0.02) {
		opts = append(opts, []string{g.name("WITHSCORES")})
	}
	return append(args, g.shuffle(opts)...)
}

// --- transactions --------------------------------------------------------------------------

func (g *gen) fTx() []item {
	switch g.r.Intn(20) {
	case 0:
		return one(nExact, g.name("EXEC"))
	case 1:
		return one(nExact, g.name("DISCARD"))
	case 2:
		return one(nExact, g.name("UNWATCH"))
	}
	var out []item
	var watched []string
	if g.chance(0.4) {
		watched = g.keys(1, 2)
		w := mk(nExact, cat([]string{g.name("WATCH")}, watched...)...)
		w.txStart = true
		out = append(out, w)
		if g.chance(0.5) {
			// another client writes a key: EXEC fails if it is a watched key
			k := watched[0]
			if g.chance(0.25) {
				k = g.key()
			}
			args := [][]string{{"SET", k, g.value()}, {"DEL", k}, {"LPUSH", k, g.elem()}, {"SADD", k, g.member()},
				{"EXPIRE", k, strconv.Itoa(g.ttl())}, {"INCR", k}, {"HSET", k, g.member(), "1"}}[g.r.Intn(7)]
			o := mk(nExact, args...)
			o.other = true
			o.extraDBs = []int{g.dbs[0]}
			out = append(out, o)
		}
		if g.chance(0.15) { // the watching client's own write also fails EXEC
			out = append(out, mk(nExact, "SET", watched[0], g.value()))
		}
		if g.chance(0.1) {
			out = append(out, mk(nExact, g.name("UNWATCH")))
		}
	}
	m := mk(nExact, g.name("MULTI"))
	m.txStart = true
	out = append(out, m)
	var sub []norm
	var subArgs [][]string
	flush := false
	nq := g.r.Intn(6)
	for i := 0; i < nq; i++ {
		switch x := g.r.Float64(); {
		case x < 0.03:
			out = append(out, mk(nExact, g.name("MULTI"))) // nested: error, transaction goes on
		case x < 0.05:
			out = append(out, mk(nExact, g.name("WATCH"), g.key()))
		case x < 0.08:
			// queued-time errors: the transaction is aborted (EXECABORT)
			bad := [][]string{{"GET"}, {"SET", g.key()}, {"NOSUCHCMD", g.key()}, {"HSET", g.key(), "m1"}, {"ZADD", g.key()}}
			out = append(out, mk(nExact, bad[g.r.Intn(len(bad))]...))
		case x < 0.13:
			c := [][]string{{"PING"}, {"ECHO", g.value()}, {"SELECT", strconv.Itoa(g.dbs[g.r.Intn(len(g.dbs))])}, {"PING", "hi"}}[g.r.Intn(4)]
			out = append(out, mk(nExact, c...))
			sub, subArgs = append(sub, nExact), append(subArgs, c)
		default:
			it := g.txInner()
			out = append(out, it)
			sub, subArgs = append(sub, it.norm), append(subArgs, it.args)
			flush = flush || it.flushOnMismatch
		}
	}
	var end item
	if g.chance(0.85) {
		end = mk(nExec, g.name("EXEC"))
		end.sub, end.subArgs = sub, subArgs
	} else {
		end = mk(nExact, g.name("DISCARD"))
	}
	end.txEnd = true
	// queued commands may SELECT, COPY or MOVE into any database of the pass: after a
	// mismatch their keys are deleted in all of them
	end.extraDBs = g.dbs
	end.flushOnMismatch = flush
	out = append(out, end)
	// clients often write a whole transaction at once: do so when no other client is
	// involved
	if g.chance(0.3) && !slices.ContainsFunc(out, func(it item) bool { return it.other }) {
		out[0].pipe = len(out)
	}
	return out
}

// fPipeline draws 2-8 plain commands sent as one pipeline (reads and writes of the same
// keys mixed), which exercises the batching of pipelined writes.
func (g *gen) fPipeline() []item {
	out := make([]item, 2+g.r.Intn(7))
	for i := range out {
		out[i] = g.txInner()
	}
	out[0].pipe = len(out)
	return out
}

// --- malformed and connection commands -----------------------------------------------------

func (g *gen) fMalformed() []item {
	k, m, v := g.key(), g.member(), g.value()
	cases := [][]string{
		// wrong arity
		{"GET"}, {"GET", k, "x"}, {"SET", k}, {"SET"}, {"HSET", k, m}, {"HGET", k}, {"LPUSH", k}, {"SADD", k},
		{"ZADD", k, "1"}, {"ZADD", k}, {"EXPIRE", k}, {"TTL"}, {"DEL"}, {"MGET"}, {"INCRBY", k}, {"LRANGE", k, "0"},
		{"ZRANGE", k, "0"}, {"MSET", k}, {"HMGET", k}, {"ZSCORE", k}, {"SMOVE", k, k}, {"LINSERT", k, "BEFORE", m},
		{"GETEX"}, {"TYPE", k, k}, {"EXISTS"}, {"RENAME", k}, {"LPOS", k}, {"ZUNION", "1"}, {"SINTERCARD", "1"},
		{"LMPOP", "1", k}, {"ECHO"}, {"ECHO", "a", "b"}, {"SELECT"}, {"DBSIZE", "x"}, {"INCR", k, "1"},
		// unknown commands
		{"FOO"}, {"FOO", k, "bar"}, {"GETT", k}, {"HSETX", k, m, v}, {"ZADDD"}, {"", k},
		{strings.Repeat("X", 200), k}, {"FOO", strings.Repeat("a", 150), "b"}, {"SET\r\nX", k}, {"CONFIGX", "GET"},
		// bad integers
		{"INCRBY", k, "1x"}, {"LRANGE", k, "a", "1"}, {"EXPIRE", k, "1.5"}, {"SETEX", k, "x", v}, {"LINDEX", k, "1.0"},
		{"ZRANGE", k, "0", "x"}, {"SELECT", "1.0"}, {"LPOP", k, "-5"}, {"HINCRBY", k, m, "x"}, {"GETRANGE", k, "a", "b"},
		{"SETRANGE", k, "x", v}, {"LTRIM", k, "0", "y"}, {"SPOP", k, "x"}, {"SRANDMEMBER", k, "1.5"}, {"MOVE", k, "x"},
		{"LREM", k, "x", m}, {"ZREMRANGEBYRANK", k, "a", "1"}, {"ZPOPMIN", k, "x"}, {"DECRBY", k, ""},
		// bad floats
		{"ZADD", k, "x", m}, {"ZINCRBY", k, "nan", m}, {"INCRBYFLOAT", k, "1.2.3"}, {"ZCOUNT", k, "x", "1"},
		{"ZRANGEBYSCORE", k, "(x", "1"}, {"HINCRBYFLOAT", k, m, "abc"}, {"ZADD", k, "1e999", m}, {"INCRBYFLOAT", k, ""},
		{"ZUNIONSTORE", k, "1", k, "WEIGHTS", "x"},
		// unknown options
		{"SET", k, v, "FOO"}, {"EXPIRE", k, "100000", "FOO"}, {"ZADD", k, "FOO", "1", m}, {"ZRANGE", k, "0", "1", "FOO"},
		{"LPOS", k, m, "FOO", "1"}, {"SCAN", "0", "FOO", "1"}, {"COPY", k, g.key(), "FOO"}, {"GETEX", k, "FOO"},
		{"LMPOP", "1", k, "UP"}, {"ZUNION", "1", k, "FOO"}, {"SINTERCARD", "1", k, "FOO", "1"}, {"SORT", k, "FOO"},
		{"HRANDFIELD", k, "1", "FOO"}, {"ZRANDMEMBER", k, "1", "FOO"}, {"ZINTERSTORE", k, "1", k, "AGGREGATE", "AVG"},
		{"SET", k, v, "EX"}, {"ZRANGEBYSCORE", k, "0", "1", "LIMIT", "0"}, {"LPOS", k, m, "RANK"},
	}
	c := cases[g.r.Intn(len(cases))]
	c = append([]string{g.name(c[0])}, c[1:]...)
	return one(nExact, c...)
}

func (g *gen) fConn() []item {
	switch g.r.Intn(8) {
	case 6:
		// no client subscribes here: PUBLISH reaches nobody, through the log
		return one(nExact, g.name(g.pick("PUBLISH", "SPUBLISH")), g.pick("ch", "k1"), g.value())
	case 7:
		c := [][]string{{"PUBSUB", "NUMSUB", "ch", "k1"}, {"PUBSUB", "NUMPAT"}, {"PUBSUB", "CHANNELS"},
			{"PUBSUB", "SHARDCHANNELS", "*"}, {"PUBSUB", "SHARDNUMSUB"}, {"PUBSUB", "FOO"}, {"PUBSUB", "NUMPAT", "x"}}[g.r.Intn(7)]
		return one(nExact, c...)
	case 3:
		return one(nHello, g.name("HELLO"), "2")
	case 4:
		bad := [][]string{{"4"}, {"abc"}, {"1"}, {"2", "FOO"}, {"2", "AUTH", "default"}, {"2", "SETNAME", "a b"}}
		return one(nExact, cat([]string{g.name("HELLO")}, bad[g.r.Intn(len(bad))]...)...)
	case 5:
		c := [][]string{{"CLIENT", "GETNAME"}, {"CLIENT", "SETNAME", "difftest"}, {"CLIENT", "SETNAME", "a b"},
			{"CLIENT", "SETNAME", ""}, {"CLIENT", "FOO"}}[g.r.Intn(5)]
		return one(nExact, c...)
	case 0:
		return one(nExact, g.name("PING"))
	case 1:
		return one(nExact, g.name("PING"), g.value())
	}
	return one(nExact, g.name("ECHO"), g.value())
}
