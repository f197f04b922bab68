package resp

import (
	"strconv"

	"github.com/nanokv/nanokv/kvstore"
)

// Writer renders replies as RESP2 or RESP3 into a byte buffer. It implements
// kvstore.ReplyWriter.
type Writer struct {
	B     []byte
	Proto int // 2 or 3
	// errs counts error replies for INFO errorstats (nil: not counted); nerr counts
	// this writer's, so that a command that replied one is known to have failed.
	errs *errorStats
	nerr uint64
}

var _ kvstore.ReplyWriter = (*Writer)(nil)

func (w *Writer) Resp3() bool { return w.Proto == 3 }

func (w *Writer) Status(s string) {
	w.B = append(w.B, '+')
	w.B = append(w.B, s...)
	w.B = append(w.B, '\r', '\n')
}

// Error writes an error line; msg carries its own prefix ("ERR ...", "WRONGTYPE ...").
// CR and LF would end the line early, so they become spaces, as in Redis.
func (w *Writer) Error(msg string) {
	w.nerr++
	if w.errs != nil {
		w.errs.record(msg)
	}
	w.B = append(w.B, '-')
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		w.B = append(w.B, c)
	}
	w.B = append(w.B, '\r', '\n')
}

func (w *Writer) header(prefix byte, n int64) {
	w.B = append(w.B, prefix)
	w.B = strconv.AppendInt(w.B, n, 10)
	w.B = append(w.B, '\r', '\n')
}

func (w *Writer) Int(n int64) { w.header(':', n) }

func (w *Writer) Bulk(b []byte) {
	w.header('$', int64(len(b)))
	w.B = append(w.B, b...)
	w.B = append(w.B, '\r', '\n')
}

func (w *Writer) BulkString(s string) {
	w.header('$', int64(len(s)))
	w.B = append(w.B, s...)
	w.B = append(w.B, '\r', '\n')
}

func (w *Writer) Null() {
	if w.Proto == 3 {
		w.B = append(w.B, "_\r\n"...)
	} else {
		w.B = append(w.B, "$-1\r\n"...)
	}
}

func (w *Writer) NullArray() {
	if w.Proto == 3 {
		w.B = append(w.B, "_\r\n"...)
	} else {
		w.B = append(w.B, "*-1\r\n"...)
	}
}

func (w *Writer) Array(n int) { w.header('*', int64(n)) }

func (w *Writer) Map(n int) {
	if w.Proto == 3 {
		w.header('%', int64(n))
	} else {
		w.header('*', 2*int64(n))
	}
}

// Push writes the header of an out-of-band message (pub/sub): RESP3's push type, an
// array in RESP2.
func (w *Writer) Push(n int) {
	if w.Proto == 3 {
		w.header('>', int64(n))
	} else {
		w.header('*', int64(n))
	}
}

func (w *Writer) Set(n int) {
	if w.Proto == 3 {
		w.header('~', int64(n))
	} else {
		w.header('*', int64(n))
	}
}

// Double writes a double as Redis 7.0 does: RESP3 ",<%.17g>", RESP2 a bulk string.
func (w *Writer) Double(f float64) { w.doubleText(kvstore.FormatDouble(f)) }

// HumanDouble writes a double in Redis's human-friendly form (GEOPOS's coordinates).
func (w *Writer) HumanDouble(f float64) { w.doubleText(kvstore.FormatHumanDouble(f)) }

// doubleText writes a double's text: RESP3 ",<text>", RESP2 a bulk string.
func (w *Writer) doubleText(s string) {
	if w.Proto == 3 {
		w.B = append(w.B, ',')
		w.B = append(w.B, s...)
		w.B = append(w.B, '\r', '\n')
		return
	}
	w.BulkString(s)
}

// Verbatim writes a RESP3 verbatim string (INFO, CLIENT INFO), a bulk string in RESP2.
func (w *Writer) Verbatim(s string) {
	if w.Proto != 3 {
		w.BulkString(s)
		return
	}
	w.header('=', int64(len(s)+4))
	w.B = append(w.B, "txt:"...)
	w.B = append(w.B, s...)
	w.B = append(w.B, '\r', '\n')
}
