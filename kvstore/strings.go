package kvstore

import (
	"fmt"
	"math"
	"math/big"
)

// maxStringSize is proto-max-bulk-len: no string may grow past it.
const maxStringSize = 512 << 20

const errStringTooBig = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"

func init() {
	register(
		&Spec{Name: "get", Arity: 2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "1.0.0", Summary: "Get the value of a key", Run: getCmd},
		&Spec{Name: "set", Arity: -3, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "1.0.0", Summary: "Set the string value of a key", Run: setCmd, Blind: setIsBlind},
		&Spec{Name: "setnx", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "1.0.0", Summary: "Set the value of a key, only if the key does not exist", Run: setnxCmd},
		&Spec{Name: "setex", Arity: 4, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "2.0.0", Summary: "Set the value and expiration of a key", Run: setexCmd(1000), Blind: setexIsBlind},
		&Spec{Name: "psetex", Arity: 4, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "2.6.0", Summary: "Set the value and expiration in milliseconds of a key", Run: setexCmd(1), Blind: setexIsBlind},
		&Spec{Name: "getset", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast | FlagReadLookups, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "1.0.0", Summary: "Set the string value of a key and return its old value", Run: getsetCmd},
		&Spec{Name: "getdel", Arity: 2, Flags: FlagWrite | FlagFast | FlagReadLookups, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "6.2.0", Summary: "Get the value of a key and delete the key", Run: getdelCmd},
		&Spec{Name: "getex", Arity: -2, Flags: FlagWrite | FlagFast | FlagReadLookups, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "6.2.0", Summary: "Get the value of a key and optionally set its expiration", Run: getexCmd},
		&Spec{Name: "mget", Arity: -2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: -1, Step: 1, Group: "string", Since: "1.0.0", Summary: "Get the values of all the given keys", Run: mgetCmd},
		&Spec{Name: "mset", Arity: -3, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: -1, Step: 2, Group: "string", Since: "1.0.1", Summary: "Set multiple keys to multiple values", Run: msetCmd, Blind: msetIsBlind},
		&Spec{Name: "msetnx", Arity: -3, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: -1, Step: 2, Group: "string", Since: "1.0.1", Summary: "Set multiple keys to multiple values, only if none of the keys exist", Run: msetnxCmd},
		&Spec{Name: "append", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "2.0.0", Summary: "Append a value to a key", Run: appendCmd},
		&Spec{Name: "strlen", Arity: 2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "2.2.0", Summary: "Get the length of the value stored in a key", Run: strlenCmd},
		&Spec{Name: "incr", Arity: 2, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "1.0.0", Summary: "Increment the integer value of a key by one", Run: incrCmd(1, false)},
		&Spec{Name: "decr", Arity: 2, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "1.0.0", Summary: "Decrement the integer value of a key by one", Run: incrCmd(-1, false)},
		&Spec{Name: "incrby", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "1.0.0", Summary: "Increment the integer value of a key by the given amount", Run: incrCmd(1, true)},
		&Spec{Name: "decrby", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "1.0.0", Summary: "Decrement the integer value of a key by the given number", Run: incrCmd(-1, true)},
		&Spec{Name: "incrbyfloat", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "2.6.0", Summary: "Increment the float value of a key by the given amount", Run: incrbyfloatCmd},
		&Spec{Name: "getrange", Arity: 4, Flags: FlagReadOnly, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "2.4.0", Summary: "Get a substring of the string stored at a key", Run: getrangeCmd},
		&Spec{Name: "substr", Arity: 4, Flags: FlagReadOnly, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "1.0.0", Summary: "Get a substring of the string stored at a key", Run: getrangeCmd},
		&Spec{Name: "setrange", Arity: 4, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "2.2.0", Summary: "Overwrite part of a string at key starting at the specified offset", Run: setrangeCmd},
	)
}

// getString returns the string at key; for another type it replies WRONGTYPE.
func (c *Ctx) getString(key []byte) (s string, ok, wrong bool) {
	it, ok, wrong := c.lookupType(key, TypeString)
	return it.str, ok, wrong
}

func getCmd(c *Ctx, args [][]byte) {
	s, ok, wrong := c.getString(args[1])
	switch {
	case wrong:
	case !ok:
		c.W.Null()
	default:
		c.W.BulkString(s)
	}
}

// setFlags are SET's options.
const (
	setNX = 1 << iota
	setXX
	setGet
	setKeepTTL
	setEX
	setPX
	setEXAT
	setPXAT
	setPersist // GETEX only
)

// parseStringOptions parses the options of SET (forSet) or GETEX from args[from:] as
// Redis's parseExtendedStringArgumentsOrReply does: an option may repeat (the last value
// wins, and only it is validated later), and each option refuses only the ones it
// conflicts with. expire is the raw EX/PX/EXAT/PXAT value.
func parseStringOptions(args [][]byte, from int, forSet bool) (flags int, expire []byte, errReply string) {
	const expiry = setEX | setPX | setEXAT | setPXAT
	for i := from; i < len(args); i++ {
		a := args[i]
		hasNext := i+1 < len(args)
		switch {
		case forSet && eq(a, "nx") && flags&setXX == 0:
			flags |= setNX
		case forSet && eq(a, "xx") && flags&setNX == 0:
			flags |= setXX
		case forSet && eq(a, "get"):
			flags |= setGet
		case forSet && eq(a, "keepttl") && flags&(setPersist|expiry) == 0:
			flags |= setKeepTTL
		case !forSet && eq(a, "persist") && flags&(setKeepTTL|expiry) == 0:
			flags |= setPersist
		case eq(a, "ex") && flags&(setKeepTTL|setPersist|expiry&^setEX) == 0 && hasNext:
			flags |= setEX
			i++
			expire = args[i]
		case eq(a, "px") && flags&(setKeepTTL|setPersist|expiry&^setPX) == 0 && hasNext:
			flags |= setPX
			i++
			expire = args[i]
		case eq(a, "exat") && flags&(setKeepTTL|setPersist|expiry&^setEXAT) == 0 && hasNext:
			flags |= setEXAT
			i++
			expire = args[i]
		case eq(a, "pxat") && flags&(setKeepTTL|setPersist|expiry&^setPXAT) == 0 && hasNext:
			flags |= setPXAT
			i++
			expire = args[i]
		default:
			return 0, nil, ErrSyntax
		}
	}
	return flags, expire, ""
}

// parseSetOptions parses SET's options (args[3:]).
func parseSetOptions(args [][]byte) (flags int, expire []byte, errReply string) {
	return parseStringOptions(args, 3, true)
}

// expireDeadline turns an EX/PX/EXAT/PXAT value into an absolute deadline in unix ms, with
// Redis's checks (getExpireMillisecondsOrReply): an integer, positive, no overflow.
func expireDeadline(raw []byte, unitSeconds, absolute bool, now int64, cmd string) (int64, string) {
	v, ok := ParseInt(raw)
	if !ok {
		return 0, ErrNotInteger
	}
	if v <= 0 || (unitSeconds && v > math.MaxInt64/1000) {
		return 0, fmt.Sprintf(ErrInvalidExp, cmd)
	}
	if unitSeconds {
		v *= 1000
	}
	if !absolute {
		if v > math.MaxInt64-now {
			return 0, fmt.Sprintf(ErrInvalidExp, cmd)
		}
		v += now
	}
	return v, ""
}

func setIsBlind(args [][]byte) bool {
	flags, expire, errReply := parseSetOptions(args)
	if errReply != "" || flags&(setNX|setXX|setGet) != 0 {
		return false
	}
	if expire != nil {
		// the value must be valid and positive; the deadline itself is computed at apply
		v, ok := ParseInt(expire)
		return ok && v > 0 && v <= math.MaxInt64/1000-1<<42
	}
	return true
}

func setCmd(c *Ctx, args [][]byte) {
	flags, expire, errReply := parseSetOptions(args)
	if errReply != "" {
		c.Error(errReply)
		return
	}
	var deadline int64
	if expire != nil {
		var e string
		deadline, e = expireDeadline(expire, flags&(setEX|setEXAT) != 0, flags&(setEXAT|setPXAT) != 0, c.Now, "set")
		if e != "" {
			c.Error(e)
			return
		}
	}
	key := args[1]
	if flags == 0 && expire == nil {
		// the common case overwrites whatever is there: store expires and replaces it
		c.setStringBytes(key, args[2], 0, false)
		c.notify(notifyString, "set", key)
		c.W.Status("OK")
		return
	}
	lookup := c.lookup
	if flags&setGet != 0 {
		lookup = c.lookupRead // GET reads the old value as Redis's GET does
	}
	old, exists := lookup(key)
	if flags&setGet != 0 && exists && old.typ != TypeString {
		c.Error(ErrWrongType)
		return
	}
	if (flags&setNX != 0 && exists) || (flags&setXX != 0 && !exists) {
		if flags&setGet != 0 {
			replyOld(c, old, exists)
		} else {
			c.W.Null()
		}
		return
	}
	c.setStringBytes(key, args[2], 0, flags&setKeepTTL != 0)
	c.notify(notifyString, "set", key)
	if expire != nil {
		c.setExpire(key, deadline)
		c.notify(notifyGeneric, "expire", key)
	}
	if flags&setGet != 0 {
		replyOld(c, old, exists)
	} else {
		c.W.Status("OK")
	}
}

func replyOld(c *Ctx, old item, exists bool) {
	if exists {
		c.W.BulkString(old.str)
	} else {
		c.W.Null()
	}
}

func setnxCmd(c *Ctx, args [][]byte) {
	if _, exists := c.lookup(args[1]); exists {
		c.W.Int(0)
		return
	}
	c.setString(args[1], string(args[2]), false)
	c.notify(notifyString, "set", args[1])
	c.W.Int(1)
}

func setexIsBlind(args [][]byte) bool {
	v, ok := ParseInt(args[2])
	return ok && v > 0 && v <= math.MaxInt64/1000-1<<42
}

func setexCmd(unit int64) func(c *Ctx, args [][]byte) {
	return func(c *Ctx, args [][]byte) {
		deadline, e := expireDeadline(args[2], unit == 1000, false, c.Now, string(lowerName(args[0])))
		if e != "" {
			c.Error(e)
			return
		}
		c.setString(args[1], string(args[3]), false)
		c.notify(notifyString, "set", args[1])
		c.setExpire(args[1], deadline)
		c.notify(notifyGeneric, "expire", args[1])
		c.W.Status("OK")
	}
}

func lowerName(b []byte) []byte {
	out := make([]byte, len(b))
	for i, ch := range b {
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		out[i] = ch
	}
	return out
}

func getsetCmd(c *Ctx, args [][]byte) {
	old, exists, wrong := c.getString(args[1])
	if wrong {
		return
	}
	c.setString(args[1], string(args[2]), false)
	c.notify(notifyString, "set", args[1])
	if exists {
		c.W.BulkString(old)
	} else {
		c.W.Null()
	}
}

func getdelCmd(c *Ctx, args [][]byte) {
	old, exists, wrong := c.getString(args[1])
	switch {
	case wrong:
	case !exists:
		c.W.Null()
	default:
		c.del(args[1])
		c.W.BulkString(old)
	}
}

func getexCmd(c *Ctx, args [][]byte) {
	flags, expire, errReply := parseStringOptions(args, 2, false)
	if errReply != "" {
		c.Error(errReply)
		return
	}
	// Redis looks the key up and checks its type before it validates the expire value
	s, ok, wrong := c.getString(args[1])
	switch {
	case wrong:
		return
	case !ok:
		c.W.Null()
		return
	}
	if expire != nil {
		deadline, e := expireDeadline(expire, flags&(setEX|setEXAT) != 0, flags&(setEXAT|setPXAT) != 0, c.Now, "getex")
		if e != "" {
			c.Error(e)
			return
		}
		if deadline <= c.Now {
			c.del(args[1])
		} else {
			c.setExpire(args[1], deadline)
			c.notify(notifyGeneric, "expire", args[1])
		}
	} else if flags&setPersist != 0 && c.persist(args[1]) {
		c.notify(notifyGeneric, "persist", args[1])
	}
	c.W.BulkString(s)
}

func mgetCmd(c *Ctx, args [][]byte) {
	c.W.Array(len(args) - 1)
	for _, k := range args[1:] {
		it, ok := c.lookup(k)
		if ok && it.typ == TypeString {
			c.W.BulkString(it.str)
		} else {
			c.W.Null()
		}
	}
}

func msetIsBlind(args [][]byte) bool { return len(args)%2 == 1 }

func msetCmd(c *Ctx, args [][]byte) {
	if len(args)%2 == 0 {
		c.Error(WrongArgs(string(lowerName(args[0]))))
		return
	}
	for i := 1; i < len(args); i += 2 {
		c.setString(args[i], string(args[i+1]), false)
		c.notify(notifyString, "set", args[i])
	}
	c.W.Status("OK")
}

func msetnxCmd(c *Ctx, args [][]byte) {
	if len(args)%2 == 0 {
		c.Error(WrongArgs("msetnx"))
		return
	}
	for i := 1; i < len(args); i += 2 {
		if _, ok := c.lookup(args[i]); ok {
			c.W.Int(0)
			return
		}
	}
	for i := 1; i < len(args); i += 2 {
		c.setString(args[i], string(args[i+1]), false)
		c.notify(notifyString, "set", args[i])
	}
	c.W.Int(1)
}

func appendCmd(c *Ctx, args [][]byte) {
	s, ok, wrong := c.getString(args[1])
	if wrong {
		return
	}
	if !ok {
		c.setString(args[1], string(args[2]), false)
		c.notify(notifyString, "append", args[1])
		c.W.Int(int64(len(args[2])))
		return
	}
	if len(s)+len(args[2]) > maxStringSize {
		c.Error(errStringTooBig)
		return
	}
	ns := s + string(args[2])
	c.setStringEnc(args[1], ns, strRaw, true)
	c.notify(notifyString, "append", args[1])
	c.W.Int(int64(len(ns)))
}

func strlenCmd(c *Ctx, args [][]byte) {
	s, _, wrong := c.getString(args[1])
	if !wrong {
		c.W.Int(int64(len(s)))
	}
}

func incrCmd(sign int64, withArg bool) func(c *Ctx, args [][]byte) {
	return func(c *Ctx, args [][]byte) {
		delta := sign
		if withArg {
			v, ok := c.parseIntArg(args[2])
			if !ok {
				return
			}
			if sign < 0 {
				if v == math.MinInt64 {
					c.Error("ERR decrement would overflow")
					return
				}
				v = -v
			}
			delta = v
		}
		s, exists, wrong := c.getString(args[1])
		if wrong {
			return
		}
		var cur int64
		if exists {
			var ok bool
			if cur, ok = ParseInt([]byte(s)); !ok {
				c.Error(ErrNotInteger)
				return
			}
		}
		if (delta < 0 && cur < 0 && delta < math.MinInt64-cur) || (delta > 0 && cur > 0 && delta > math.MaxInt64-cur) {
			c.Error(ErrOverflow)
			return
		}
		cur += delta
		c.setString(args[1], formatInt(cur), true)
		c.notify(notifyString, "incrby", args[1])
		c.W.Int(cur)
	}
}

func formatInt(v int64) string { return fmt.Sprint(v) }

func incrbyfloatCmd(c *Ctx, args [][]byte) {
	s, exists, wrong := c.getString(args[1])
	if wrong {
		return
	}
	cur := new(big.Float).SetPrec(longDoublePrec)
	if exists {
		v, ok := parseLongDouble([]byte(s))
		if !ok {
			c.Error(ErrNotFloat)
			return
		}
		cur = v
	}
	incr, ok := parseLongDouble(args[2])
	if !ok {
		c.Error(ErrNotFloat)
		return
	}
	if cur.IsInf() || incr.IsInf() {
		c.Error("ERR increment would produce NaN or Infinity")
		return
	}
	out, ok := addLongDouble(cur, incr)
	if !ok {
		c.Error("ERR increment would produce NaN or Infinity")
		return
	}
	c.setStringEnc(args[1], out, strNoInt, true)
	c.notify(notifyString, "incrbyfloat", args[1])
	c.W.BulkString(out)
}

func getrangeCmd(c *Ctx, args [][]byte) {
	start, end, ok := c.parseIntArgs(args[2], args[3])
	if !ok {
		return
	}
	s, _, wrong := c.getString(args[1])
	if wrong {
		return
	}
	n := int64(len(s))
	if start < 0 && end < 0 && start > end {
		c.W.BulkString("")
		return
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	if start < 0 {
		start = 0
	}
	if end < 0 {
		end = 0
	}
	if end >= n {
		end = n - 1
	}
	if start > end || n == 0 {
		c.W.BulkString("")
		return
	}
	c.W.BulkString(s[start : end+1])
}

func setrangeCmd(c *Ctx, args [][]byte) {
	offset, ok := c.parseIntArg(args[2])
	if !ok {
		return
	}
	if offset < 0 {
		c.Error("ERR offset is out of range")
		return
	}
	val := args[3]
	s, exists, wrong := c.getString(args[1])
	if wrong {
		return
	}
	if len(val) == 0 {
		c.W.Int(int64(len(s)))
		return
	}
	if offset+int64(len(val)) > maxStringSize {
		c.Error(errStringTooBig)
		return
	}
	need := int(offset) + len(val)
	b := make([]byte, max(need, len(s)))
	copy(b, s)
	copy(b[offset:], val)
	c.setStringEnc(args[1], string(b), strRaw, exists)
	c.notify(notifyString, "setrange", args[1])
	c.W.Int(int64(len(b)))
}
