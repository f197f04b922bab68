package kvstore

func init() {
	register(&Spec{Name: "lcs", Arity: -3, Flags: FlagReadOnly, FirstKey: 1, LastKey: 2, Step: 1, Group: "string", Since: "7.0.0", Summary: "Find longest common substring", Run: lcsCmd})
}

// lcsCmd is LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN]: the longest common
// subsequence of two strings (a missing key is ""), by the dynamic-programming table and
// the backtracking Redis 7.0 uses, so that IDX reports the same ranges in the same order
// (from the ends of the strings back).
func lcsCmd(c *Ctx, args [][]byte) {
	a, aok := c.lookup(args[1])
	b, bok := c.lookup(args[2])
	if (aok && a.typ != TypeString) || (bok && b.typ != TypeString) {
		c.Error("ERR The specified keys must contain string values")
		return
	}
	var getLen, getIdx, withMatchLen bool
	var minMatchLen int64
	for i := 3; i < len(args); i++ {
		switch {
		case eq(args[i], "idx"):
			getIdx = true
		case eq(args[i], "len"):
			getLen = true
		case eq(args[i], "withmatchlen"):
			withMatchLen = true
		case eq(args[i], "minmatchlen") && i+1 < len(args):
			v, ok := c.parseIntArg(args[i+1])
			if !ok {
				return
			}
			minMatchLen = max(v, 0)
			i++
		default:
			c.Error(ErrSyntax)
			return
		}
	}
	if getIdx && getLen {
		c.Error("ERR If you want both the length and indexes, please just use IDX.")
		return
	}
	x, y := a.str, b.str
	cells := uint64(len(x)+1) * uint64(len(y)+1)
	if cells*4 > maxStringSize {
		c.Error("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
		return
	}
	// t[i*(n+1)+j] is the LCS length of x[:i] and y[:j]
	n := len(y)
	t := make([]uint32, cells)
	at := func(i, j int) uint32 { return t[i*(n+1)+j] }
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= n; j++ {
			switch {
			case x[i-1] == y[j-1]:
				t[i*(n+1)+j] = at(i-1, j-1) + 1
			default:
				t[i*(n+1)+j] = max(at(i-1, j), at(i, j-1))
			}
		}
	}
	total := at(len(x), n)
	if getLen {
		c.W.Int(int64(total))
		return
	}
	// Backtrack from the ends, collecting the subsequence and the contiguous ranges.
	type rng struct{ a0, a1, b0, b1 int }
	var ranges []rng
	out := make([]byte, total)
	k := int(total)
	i, j := len(x), n
	cur, open := rng{}, false
	emit := func() {
		if minMatchLen == 0 || int64(cur.a1-cur.a0+1) >= minMatchLen {
			ranges = append(ranges, cur)
		}
		open = false
	}
	for i > 0 && j > 0 {
		if x[i-1] == y[j-1] {
			out[k-1] = x[i-1]
			k--
			switch {
			case !open:
				cur, open = rng{i - 1, i - 1, j - 1, j - 1}, true
			case cur.a0 == i && cur.b0 == j:
				cur.a0--
				cur.b0--
			default:
				emit()
			}
			i--
			j--
			if open && (cur.a0 == 0 || cur.b0 == 0) {
				emit()
			}
			continue
		}
		if at(i-1, j) > at(i, j-1) {
			i--
		} else {
			j--
		}
		if open {
			emit()
		}
	}
	if !getIdx {
		c.W.BulkString(string(out))
		return
	}
	c.W.Map(2)
	c.W.BulkString("matches")
	c.W.Array(len(ranges))
	for _, r := range ranges {
		if withMatchLen {
			c.W.Array(3)
		} else {
			c.W.Array(2)
		}
		c.W.Array(2)
		c.W.Int(int64(r.a0))
		c.W.Int(int64(r.a1))
		c.W.Array(2)
		c.W.Int(int64(r.b0))
		c.W.Int(int64(r.b1))
		if withMatchLen {
			c.W.Int(int64(r.a1 - r.a0 + 1))
		}
	}
	c.W.BulkString("len")
	c.W.Int(int64(total))
}
