package kvstore

import "strconv"

// SplitArgs splits a line into arguments as Redis's sdssplitargs (inline requests, a
// function library's first line): spaces separate arguments; "double quotes" take \n \r
// \t \b \a \\ \" and \xHH escapes; 'single quotes' take \' only. A closing quote must be
// followed by a space or the end; false for unbalanced quotes. Arguments are appended to
// out.
func SplitArgs(line []byte, out [][]byte) ([][]byte, bool) {
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i >= len(line) {
			return out, true
		}
		var cur []byte
		inq, insq := false, false
		for done := false; !done; {
			if i >= len(line) {
				if inq || insq {
					return nil, false
				}
				break
			}
			c := line[i]
			switch {
			case inq:
				switch {
				case c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
					v, _ := strconv.ParseUint(string(line[i+2:i+4]), 16, 8)
					cur = append(cur, byte(v))
					i += 3
				case c == '\\' && i+1 < len(line):
					i++
					switch line[i] {
					case 'n':
						cur = append(cur, '\n')
					case 'r':
						cur = append(cur, '\r')
					case 't':
						cur = append(cur, '\t')
					case 'b':
						cur = append(cur, '\b')
					case 'a':
						cur = append(cur, '\a')
					default:
						cur = append(cur, line[i])
					}
				case c == '"':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, false
					}
					done = true
				default:
					cur = append(cur, c)
				}
			case insq:
				switch {
				case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
					i++
					cur = append(cur, '\'')
				case c == '\'':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, false
					}
					done = true
				default:
					cur = append(cur, c)
				}
			default:
				switch {
				case isSpace(c):
					done = true
					i-- // the space is skipped below
				case c == '"':
					inq = true
				case c == '\'':
					insq = true
				default:
					cur = append(cur, c)
				}
			}
			i++
		}
		if cur == nil {
			cur = []byte{}
		}
		out = append(out, cur)
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\v' || c == '\f'
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}
