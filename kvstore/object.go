package kvstore

// OBJECT ENCODING and OBJECT REFCOUNT answer with what Redis 7.0 would hold. nanokv keeps
// every value one way (a Go string, or a collection with an index), so the encoding is
// not its own: it is what Redis's conversion rules make of the commands that built the
// value, and those depend on history, not only on the value. A hash that grew past 512
// fields and shrank back is still a "hashtable" in Redis, and "12" written by APPEND is
// "raw" where SET makes it "int". So each value carries the little history it needs:
//
//   - a string, the strEnc in its key table meta (two bits), set by the command that
//     wrote it;
//   - a hash, set or sorted set, a large flag that the first write past a compact
//     encoding's limits sets (Redis never converts back), and that COPY keeps.
//
// A value loaded from a snapshot or by RESTORE gets the encoding a freshly loaded one
// gets in Redis: a string as SET would make it, a collection compact while within the
// limits. That is also what a Redis replica holds after a full sync, and a Redis server
// after a restart.

// Redis 7.0's default limits of the compact encodings (hash-max-listpack-entries and
// -value, set-max-intset-entries, zset-max-listpack-entries and -value).
const (
	hashMaxListpackEntries = 512
	hashMaxListpackValue   = 64
	setMaxIntsetEntries    = 512
	zsetMaxListpackEntries = 128
	zsetMaxListpackValue   = 64
	embstrSizeLimit        = 44    // OBJ_ENCODING_EMBSTR_SIZE_LIMIT
	sharedIntegers         = 10000 // OBJ_SHARED_INTEGERS
	sharedRefcount         = 1<<31 - 1
)

// strEnc records how the command that wrote a string made it in Redis.
type strEnc uint8

const (
	// strAuto is tryObjectEncoding's choice (SET, MSET, INCR, RESTORE...): "int" for
	// an integer (shared, refcount 2^31−1, below 10000), "embstr" up to 44 bytes, else
	// "raw".
	strAuto strEnc = iota
	// strUnshared is strAuto without the shared integers: COPY duplicates an "int".
	strUnshared
	// strNoInt is createStringObject's choice (INCRBYFLOAT): "embstr" up to 44 bytes,
	// else "raw", even for digits.
	strNoInt
	// strRaw is a string changed in place (APPEND to an existing key, SETRANGE, SETBIT,
	// BITFIELD, BITOP, PFADD...): Redis unshares it into a "raw" string.
	strRaw
)

// copied is the encoding of a COPY of a string of encoding e.
func (e strEnc) copied() strEnc {
	if e == strAuto {
		return strUnshared
	}
	return e
}

// stringEncoding is OBJECT ENCODING of string v written with e, and its refcount.
func stringEncoding(v string, e strEnc) (name string, refcount int64) {
	if e == strAuto || e == strUnshared {
		if n, ok := ParseInt([]byte(v)); ok {
			if e == strAuto && n >= 0 && n < sharedIntegers {
				return "int", sharedRefcount
			}
			return "int", 1
		}
	}
	if e != strRaw && len(v) <= embstrSizeLimit {
		return "embstr", 1
	}
	return "raw", 1
}

// encoding is OBJECT ENCODING of it, and its refcount.
func (it item) encoding() (string, int64) {
	switch c := it.coll.(type) {
	case nil:
		return stringEncoding(it.str, it.enc)
	case *hashColl:
		return pick(c.large, "hashtable", "listpack"), 1
	case *setColl:
		return pick(c.large, "hashtable", "intset"), 1
	case *zset:
		return pick(c.large.Load(), "skiplist", "listpack"), 1
	case *listColl:
		return "quicklist", 1 // Redis 7.0 keeps every list in a quicklist
	}
	return "stream", 1
}

func pick(cond bool, yes, no string) string {
	if cond {
		return yes
	}
	return no
}

// The large flags follow Redis's conversions: each is checked where an element is
// stored, and a collection rebuilt from scratch (RESTORE, a snapshot, a *STORE
// command's result) passes the same checks element by element.

// noteSet records hashColl.set(field, value): a field or value over 64 bytes, or more
// than 512 fields, makes it a hashtable.
func (h *hashColl) noteSet(field, value string) {
	if !h.large && (len(field) > hashMaxListpackValue || len(value) > hashMaxListpackValue || len(h.entries) > hashMaxListpackEntries) {
		h.large = true
	}
}

// noteAdd records a new member m: a member that is not an integer, or more than 512
// members, makes it a hashtable.
func (s *setColl) noteAdd(m string) {
	if s.large {
		return
	}
	if _, isInt := ParseInt([]byte(m)); !isInt || len(s.members) > setMaxIntsetEntries {
		s.large = true
	}
}

// noteInsert records a new member: one over 64 bytes, or more than 128 members, makes
// it a skiplist.
func (z *zset) noteInsert(member string) {
	if !z.large.Load() && (len(member) > zsetMaxListpackValue || len(z.dict) > zsetMaxListpackEntries) {
		z.large.Store(true)
	}
}

var objectArity = map[string]int{"encoding": 3, "refcount": 3, "idletime": 3, "freq": 3, "help": 2}

var objectHelp = []string{
	"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"ENCODING <key>",
	"    Return the kind of internal representation used in order to store the value",
	"    associated with a <key>.",
	"FREQ <key>",
	"    Return the access frequency index of the <key>. The returned integer is",
	"    proportional to the logarithm of the recent access frequency of the key.",
	"IDLETIME <key>",
	"    Return the idle time of the <key>, that is the approximated number of",
	"    seconds elapsed since the last access to the key.",
	"REFCOUNT <key>",
	"    Return the number of references of the value associated with the specified",
	"    <key>.",
	"HELP",
	"    Prints this help.",
}

// errNoLFU is OBJECT FREQ's answer under any maxmemory policy but an LFU one.
const errNoLFU = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."

// errLFUIdle is OBJECT IDLETIME's answer under an LFU policy.
const errLFUIdle = "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."

func objectCmd(c *Ctx, args [][]byte) {
	sub, msg := CheckSubcommand(args, "object", objectArity)
	if msg != "" {
		c.Error(msg)
		return
	}
	if sub == "help" {
		c.statusLines(objectHelp)
		return
	}
	c.noTouch = true
	it, ok := c.lookupWrite(args[2]) // LOOKUP_NONOTIFY, as Redis
	if !ok {
		c.W.Null()
		return
	}
	v, mode := clockOf(&c.db(args[2]).keys, args[2])
	switch sub {
	case "encoding":
		name, _ := it.encoding()
		c.W.BulkString(name)
	case "refcount":
		_, n := it.encoding()
		c.W.Int(n)
	case "idletime":
		if mode == accessLFU {
			c.Error(errLFUIdle)
			return
		}
		c.W.Int(idleSeconds(v, c.Now))
	case "freq":
		if mode != accessLFU {
			c.Error(errNoLFU)
			return
		}
		c.W.Int(int64(c.s.acc.lfuCounter(v, c.Now)))
	}
}
