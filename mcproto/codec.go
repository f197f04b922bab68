package mcproto

import (
	"bytes"
	"errors"
	"math"

	"github.com/nanokv/nanokv/kvstore"
)

// Limits of memcached 1.6, where the protocol has them.
const (
	// MaxKeyLen is KEY_MAX_LENGTH.
	MaxKeyLen = 250
	// DefaultItemSizeMax is -I's default: one item (header, key and value) is at most 1 MiB.
	DefaultItemSizeMax = 1 << 20
	// lineSearchLimit: memcached closes a connection that sent this much without a newline,
	// unless it is a (possibly huge) get or gets.
	lineSearchLimit = 2048
)

var (
	// ErrIncomplete: the buffer ends inside a request; read more.
	ErrIncomplete = errors.New("mcproto: incomplete request")
	// ErrLineTooLong: no newline within the limit; memcached closes such a connection.
	ErrLineTooLong = errors.New("mcproto: command line too long")
)

// Limits are a connection's parsing limits.
type Limits struct {
	ItemSizeMax int // -I
	MaxLine     int // longest get/gets line accepted
}

// Kind is a request's command.
type Kind uint8

const (
	KindError Kind = iota // the codec refused the request: reply Request.Err
	KindGet
	KindGets
	KindGat
	KindGats
	KindSet
	KindAdd
	KindReplace
	KindAppend
	KindPrepend
	KindCas
	KindDelete
	KindIncr
	KindDecr
	KindTouch
	KindFlushAll
	KindVersion
	KindVerbosity
	KindQuit
	KindStats
	KindMetaGet
	KindMetaSet
	KindMetaDelete
	KindMetaArith
	KindMetaNoop
	KindMetaDebug
	KindLRUCrawler // lru_crawler <subcommand> ... (admin.go)
	KindCacheMemlimit
	KindShutdown
)

// Request is one parsed request. Its byte slices point into the parsed buffer.
type Request struct {
	Kind   Kind
	Tokens [][]byte // the command line split on spaces; Tokens[0] is the command
	// Err is the whole reply line for a request refused by the codec (without "\r\n").
	Err string
	// Noreply: the classic command ended in "noreply" (it also silences Err).
	Noreply bool
	// Swallow is how many bytes after the line belong to a refused request and are
	// discarded unread (a too-large item, a refused ms); it may exceed the buffer.
	Swallow int
	// TooLarge: a storage request refused for its size (set also deletes the old item).
	TooLarge bool

	// Storage requests (classic and ms) with a valid line:
	Key     []byte
	Flags   uint32
	Exptime int64
	CAS     uint64
	Data    []byte
	// Meta holds the parsed flags of ms (the other meta commands parse theirs in their
	// handler, with ParseMeta).
	Meta *Meta
}

// commandKinds are the kinds of the commands that share a case in Parse. (A map literal
// in Parse itself was built anew for every request.)
var commandKinds = map[string]Kind{
	"get": KindGet, "gets": KindGets, "gat": KindGat, "gats": KindGats,
	"set": KindSet, "add": KindAdd, "replace": KindReplace, "append": KindAppend, "prepend": KindPrepend,
	"incr": KindIncr, "decr": KindDecr, "touch": KindTouch,
}

// Parse parses the first request in b. It returns ErrIncomplete if b ends inside it
// (need, when known, is the total length the request takes), and ErrLineTooLong when the
// connection must be closed. A protocol error the client can recover from is a Request of
// KindError, never an error.
func Parse(b []byte, lim Limits, scratch [][]byte) (req Request, n, need int, err error) {
	line, n, err := ReadLine(b, lim.MaxLine)
	if err != nil {
		return Request{}, 0, 0, err
	}
	req.Tokens = Tokenize(line, scratch[:0])
	toks := req.Tokens
	if len(toks) == 0 || len(toks[0]) < 2 {
		return errReq(req, "ERROR"), n, 0, nil
	}
	cmd := toks[0]
	if len(cmd) == 2 && cmd[0] == 'm' {
		switch cmd[1] {
		case 'g':
			req.Kind = KindMetaGet
		case 's':
			return parseMetaSet(b, n, req, lim)
		case 'd':
			req.Kind = KindMetaDelete
		case 'a':
			req.Kind = KindMetaArith
		case 'n':
			req.Kind = KindMetaNoop
			return req, n, 0, nil
		case 'e':
			req.Kind = KindMetaDebug
			if len(toks) < 2 {
				return errReq(req, "CLIENT_ERROR bad command line format"), n, 0, nil
			}
			return req, n, 0, nil
		default:
			return errReq(req, "ERROR"), n, 0, nil
		}
		if len(toks) < 2 {
			return errReq(req, "ERROR"), n, 0, nil
		}
		return req, n, 0, nil
	}
	// nt counts tokens as memcached's ntokens does (with its terminating empty token), so
	// that the arity checks below read like proto_text.c's.
	nt := len(toks) + 1
	switch string(cmd) {
	case "get", "gets", "gat", "gats":
		if nt < 3 {
			return errReq(req, "ERROR"), n, 0, nil
		}
		req.Kind = commandKinds[string(cmd)]
		return req, n, 0, nil
	case "set", "add", "replace", "append", "prepend":
		if nt != 6 && nt != 7 {
			return errReq(req, "ERROR"), n, 0, nil
		}
		req.Kind = commandKinds[string(cmd)]
		return parseStorage(b, n, req, lim)
	case "cas":
		if nt != 7 && nt != 8 {
			return errReq(req, "ERROR"), n, 0, nil
		}
		req.Kind = KindCas
		return parseStorage(b, n, req, lim)
	case "incr", "decr", "touch":
		if nt != 4 && nt != 5 {
			return errReq(req, "ERROR"), n, 0, nil
		}
		req.Kind = commandKinds[string(cmd)]
	case "delete":
		if nt < 3 || nt > 5 {
			return errReq(req, "ERROR"), n, 0, nil
		}
		req.Kind = KindDelete
	case "flush_all":
		if nt < 2 || nt > 4 {
			return errReq(req, "ERROR"), n, 0, nil
		}
		req.Kind = KindFlushAll
	case "verbosity":
		if nt != 3 && nt != 4 {
			return errReq(req, "ERROR"), n, 0, nil
		}
		req.Kind = KindVerbosity
	case "cache_memlimit":
		if nt != 3 && nt != 4 {
			return errReq(req, "ERROR"), n, 0, nil
		}
		req.Kind = KindCacheMemlimit
	case "version":
		req.Kind = KindVersion
		return req, n, 0, nil
	case "quit":
		req.Kind = KindQuit
		return req, n, 0, nil
	case "stats":
		req.Kind = KindStats
		return req, n, 0, nil
	case "lru_crawler":
		req.Kind = KindLRUCrawler
		return req, n, 0, nil
	case "shutdown":
		req.Kind = KindShutdown
		return req, n, 0, nil
	default:
		return errReq(req, "ERROR"), n, 0, nil
	}
	req.Noreply = string(toks[len(toks)-1]) == "noreply"
	return req, n, 0, nil
}

func errReq(req Request, msg string) Request {
	req.Kind = KindError
	req.Err = msg
	return req
}

// parseStorage reads the rest of set/add/replace/append/prepend/cas <key> <flags>
// <exptime> <bytes> [<cas>] [noreply] and its data block, checking what memcached 1.6's
// process_update_command checks, in its order. A line it refuses has no data block: the
// client's data is then read as a command, as memcached does.
func parseStorage(b []byte, n int, req Request, lim Limits) (Request, int, int, error) {
	toks := req.Tokens
	req.Noreply = string(toks[len(toks)-1]) == "noreply"
	const badLine = "CLIENT_ERROR bad command line format"
	if len(toks[1]) > MaxKeyLen {
		return errReq(req, badLine), n, 0, nil
	}
	req.Key = toks[1]
	flags, ok1 := ParseUint32(toks[2])
	exptime, ok2 := ParseInt32(toks[3])
	vlen, ok3 := ParseInt32(toks[4])
	if !ok1 || !ok2 || !ok3 {
		return errReq(req, badLine), n, 0, nil
	}
	if req.Kind == KindCas {
		cas, ok := ParseUint64(toks[5])
		if !ok {
			return errReq(req, badLine), n, 0, nil
		}
		req.CAS = cas
	}
	if vlen < 0 || vlen > math.MaxInt32-2 {
		return errReq(req, badLine), n, 0, nil
	}
	req.Flags, req.Exptime = flags, exptime
	return readData(b, n, req, int(vlen), lim)
}

// readData takes the data block of vlen bytes and its "\r\n" after the line (n bytes).
func readData(b []byte, n int, req Request, vlen int, lim Limits) (Request, int, int, error) {
	if TooLarge(len(req.Key), req.Flags, vlen, lim.ItemSizeMax) {
		req.TooLarge = true
		req.Swallow = vlen + 2
		return errReq(req, "SERVER_ERROR object too large for cache"), n, 0, nil
	}
	total := n + vlen + 2
	if len(b) < total {
		return Request{}, 0, total, ErrIncomplete
	}
	block := b[n:total]
	if block[vlen] != '\r' || block[vlen+1] != '\n' {
		return errReq(req, "CLIENT_ERROR bad data chunk"), total, 0, nil
	}
	req.Data = block[:vlen:vlen]
	return req, total, 0, nil
}

// TooLarge reports whether an item with this key length, flags and value length exceeds
// the item size limit as memcached 1.6 counts it.
func TooLarge(keyLen int, flags uint32, vlen, itemSizeMax int) bool {
	return kvstore.MCItemSize(keyLen, flags, vlen) > itemSizeMax
}

// parseMetaSet reads ms <key> <datalen> <flags>* and its data block. A line refused
// before the data length is known has no data block; one refused after (bad flags, too
// large) swallows it, as memcached 1.6 does.
func parseMetaSet(b []byte, n int, req Request, lim Limits) (Request, int, int, error) {
	req.Kind = KindMetaSet
	toks := req.Tokens
	const badLine = "CLIENT_ERROR bad command line format"
	if len(toks) < 2 {
		return errReq(req, "ERROR"), n, 0, nil
	}
	if len(toks) < 3 || len(toks[1]) > MaxKeyLen {
		return errReq(req, badLine), n, 0, nil
	}
	vlen, ok := ParseInt32(toks[2])
	if !ok || vlen < 0 || vlen > math.MaxInt32-2 {
		return errReq(req, badLine), n, 0, nil
	}
	m, key, errLine := ParseMeta(KindMetaSet, toks[1], toks[3:])
	if errLine != "" {
		req.Key = toks[1]
		req.Swallow = int(vlen) + 2
		return errReq(req, errLine), n, 0, nil
	}
	req.Key, req.Meta = key, m
	req.Flags = m.ClientFlags
	r, n2, need, err := readData(b, n, req, int(vlen), lim)
	if r.Kind == KindError {
		// meta commands report errors even with q
		r.Meta = m
	}
	return r, n2, need, err
}

// ReadLine returns the first line of b without its "\n" or "\r\n", and the bytes it takes.
// Like memcached it stops reading a line at a NUL (its parser works on C strings).
func ReadLine(b []byte, maxLine int) (line []byte, n int, err error) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		if len(b) > lineSearchLimit {
			// memcached keeps reading only what looks like a large multiget
			p := b
			skipped := 0
			for len(p) > 0 && p[0] == ' ' {
				p = p[1:]
				skipped++
			}
			if skipped > 100 || !(bytes.HasPrefix(p, []byte("get ")) || bytes.HasPrefix(p, []byte("gets "))) {
				return nil, 0, ErrLineTooLong
			}
			if maxLine > 0 && len(b) > maxLine {
				return nil, 0, ErrLineTooLong
			}
		}
		return nil, 0, ErrIncomplete
	}
	line = b[:i]
	if len(line) > 1 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	if z := bytes.IndexByte(line, 0); z >= 0 {
		line = line[:z]
	}
	return line, i + 1, nil
}

// Tokenize splits a command line on spaces (runs of them count as one) into dst.
func Tokenize(line []byte, dst [][]byte) [][]byte {
	for len(line) > 0 {
		for len(line) > 0 && line[0] == ' ' {
			line = line[1:]
		}
		if len(line) == 0 {
			break
		}
		end := bytes.IndexByte(line, ' ')
		if end < 0 {
			end = len(line)
		}
		dst = append(dst, line[:end:end])
		line = line[end:]
	}
	return dst
}

// Numbers are parsed as memcached's safe_strto* functions do (strtoul and friends): C
// white space and a sign may lead, the digits must be followed by the end or white space.

func isSpace(c byte) bool { return c == ' ' || ('\t' <= c && c <= '\r') }

// parseC parses like strtoull/strtoll: it returns the magnitude, whether a '-' was seen,
// and whether the text was a number (overflow is not).
func parseC(b []byte) (mag uint64, neg, ok bool) {
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	start := i
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		d := uint64(b[i] - '0')
		if mag > (math.MaxUint64-d)/10 {
			return 0, false, false
		}
		mag = mag*10 + d
		i++
	}
	if i == start || (i < len(b) && !isSpace(b[i])) {
		return 0, false, false
	}
	return mag, neg, true
}

// ParseUint64 is safe_strtoull: a '-' is refused when the value would wrap as signed
// (strtoull accepts "-1" as 2^64−1; memcached then refuses it), "-0" is 0.
func ParseUint64(b []byte) (uint64, bool) {
	v, neg, ok := parseC(b)
	if !ok {
		return 0, false
	}
	if neg {
		if v == 0 {
			return 0, true
		}
		v = -v // what strtoull returns for a negative number
		if int64(v) < 0 {
			return 0, false
		}
	}
	return v, true
}

// ParseUint32 is safe_strtoul on a 64-bit machine, stored into 32 bits as memcached 1.6
// stores client flags: the value wraps.
func ParseUint32(b []byte) (uint32, bool) {
	v, ok := ParseUint64(b)
	return uint32(v), ok
}

// ParseInt32 is safe_strtol on a 64-bit machine: strtol parses a long (64 bits; beyond
// is ERANGE, refused) and memcached 1.6 stores it into an int32, which keeps the low 32
// bits. So 2147483648 is INT_MIN and 4294967297 is 1: memcached takes an exptime of
// 4102444800 (the year 2100) as -192522496, an item already expired, and nanokv does the
// same.
func ParseInt32(b []byte) (int64, bool) {
	v, neg, ok := parseC(b)
	if !ok {
		return 0, false
	}
	var l int64
	switch {
	case neg && v <= 1<<63:
		l = int64(-v) // -2^63 stays itself
	case !neg && v <= math.MaxInt64:
		l = int64(v)
	default:
		return 0, false
	}
	return int64(int32(l)), true
}
