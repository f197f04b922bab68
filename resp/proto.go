package resp

import (
	"errors"
	"math"

	"github.com/nanokv/nanokv/kvstore"
)

// Limits as Redis 7.0 has them (networking.c). A request that breaks one is a protocol
// error: the client gets the message and its connection is closed.
const (
	// InlineMax bounds an inline request line and the count lines of a multibulk request
	// (PROTO_INLINE_MAX_SIZE).
	InlineMax = 64 << 10
	// DefaultMaxBulk is proto-max-bulk-len.
	DefaultMaxBulk = 512 << 20
	// unauthMaxCount and unauthMaxBulk bound requests before AUTH when a password is set.
	unauthMaxCount = 10
	unauthMaxBulk  = 16 << 10
)

// ErrIncomplete means the buffer ends before the request does.
var ErrIncomplete = errors.New("resp: incomplete request")

// ProtocolError is a malformed request; Msg is what Redis replies (after "ERR ").
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return e.Msg }

func protoErr(msg string) error { return &ProtocolError{Msg: "Protocol error: " + msg} }

// ParseLimits are the per-connection limits a parse is checked against.
type ParseLimits struct {
	MaxBulk int64 // proto-max-bulk-len
	Unauth  bool  // a password is required and the client has not authenticated
}

// ParseCommand parses the request at the start of b into args (appended to args[:0],
// pointing into b). It returns the bytes consumed. An empty request (a blank inline line,
// "*0") consumes its bytes and returns no args.
//
// With ErrIncomplete, need is a lower bound on the bytes the whole request takes (known
// once the header of a large bulk is in), so the caller can read without re-parsing.
func ParseCommand(b []byte, args [][]byte, lim ParseLimits) (out [][]byte, n, need int, err error) {
	out = args[:0]
	if len(b) == 0 {
		return out, 0, 1, ErrIncomplete
	}
	if b[0] != '*' {
		return parseInline(b, out)
	}
	line, next, ok := readLine(b, 1)
	if !ok {
		if len(b) > InlineMax {
			return out, 0, 0, protoErr("too big mbulk count string")
		}
		return out, 0, len(b) + 1, ErrIncomplete
	}
	count, ok := parseLen(line)
	if !ok || count > math.MaxInt32 {
		return out, 0, 0, protoErr("invalid multibulk length")
	}
	if count <= 0 {
		return out, next, 0, nil
	}
	if lim.Unauth && count > unauthMaxCount {
		return out, 0, 0, protoErr("unauthenticated multibulk length")
	}
	pos := next
	for i := int64(0); i < count; i++ {
		if pos >= len(b) {
			return out, 0, pos + 1, ErrIncomplete
		}
		if b[pos] != '$' {
			return out, 0, 0, protoErr("expected '$', got '" + string(b[pos]) + "'")
		}
		line, next, ok := readLine(b, pos+1)
		if !ok {
			if len(b)-pos > InlineMax {
				return out, 0, 0, protoErr("too big bulk count string")
			}
			return out, 0, len(b) + 1, ErrIncomplete
		}
		size, ok := parseLen(line)
		maxBulk := lim.MaxBulk
		if maxBulk <= 0 {
			maxBulk = DefaultMaxBulk
		}
		if !ok || size < 0 || size > maxBulk {
			return out, 0, 0, protoErr("invalid bulk length")
		}
		if lim.Unauth && size > unauthMaxBulk {
			return out, 0, 0, protoErr("unauthenticated bulk length")
		}
		end := next + int(size)
		if end+2 > len(b) {
			return out, 0, end + 2, ErrIncomplete
		}
		// Redis does not check the two bytes after a bulk; it skips them. So do we.
		out = append(out, b[next:end:end])
		pos = end + 2
	}
	return out, pos, 0, nil
}

// readLine finds the line starting at from, ended by "\r\n" (Redis looks for '\r').
func readLine(b []byte, from int) (line []byte, next int, ok bool) {
	for i := from; i < len(b); i++ {
		if b[i] == '\r' {
			if i+1 >= len(b) {
				return nil, 0, false
			}
			return b[from:i], i + 2, true
		}
	}
	return nil, 0, false
}

// parseLen parses a count or length as Redis's string2ll.
func parseLen(b []byte) (int64, bool) { return kvstore.ParseInt(b) }

// parseInline splits an inline request line as Redis's sdssplitargs: spaces separate
// arguments; "double quotes" take \n \r \t \b \a \\ \" and \xHH escapes; 'single quotes'
// take \' only. A closing quote must be followed by a space or the end.
func parseInline(b []byte, out [][]byte) ([][]byte, int, int, error) {
	nl := -1
	for i, c := range b {
		if c == '\n' {
			nl = i
			break
		}
	}
	if nl < 0 {
		if len(b) > InlineMax {
			return out, 0, 0, protoErr("too big inline request")
		}
		return out, 0, len(b) + 1, ErrIncomplete
	}
	line := b[:nl]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	args, ok := kvstore.SplitArgs(line, out)
	if !ok {
		return out[:0], 0, 0, protoErr("unbalanced quotes in request")
	}
	return args, nl + 1, 0, nil
}
