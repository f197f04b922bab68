package kvstore

import "strings"

// maxmemory is decided where a command enters (internal/memlimit, the frontends), from
// the entering node's memory, which differs between replicas. A script, though, is
// refused by Redis 7.0 inside: a script without flags may write while memory is over
// maxmemory only once it has written (scriptVerifyOOM: "we can't stop in the middle"),
// so its first denyoom call fails. That decision is made on every replica as the
// script runs, so the frontend's view of memory travels in the log: an op proposed
// over maxmemory comes after an opOverMemory, and every replica fails the same call.

const opOverMemory byte = 9

// ErrOOM is Redis's reply to a command refused over maxmemory.
const ErrOOM = "OOM command not allowed when used memory > 'maxmemory'."

// AppendOverMemory marks the op appended next as proposed over maxmemory.
func AppendOverMemory(dst []byte) []byte { return append(dst, opOverMemory) }

// ScriptDeniesOOM reports whether a call of a script command (EVAL, EVALSHA, FCALL and
// their _RO forms) is one Redis 7.0 refuses while used memory is over maxmemory: its
// script or function has flags (a shebang line, a registered function's) that let it
// write without allow-oom (scriptFlagsToCmdFlags makes it a denyoom command). A script
// without a shebang line is not refused here, but at its first write (above); an
// unknown script or function neither: it fails as it runs.
func (s *Store) ScriptDeniesOOM(args [][]byte) bool {
	if len(args) < 2 {
		return false
	}
	var flags funcFlags
	switch strings.ToLower(string(args[0])) {
	case "eval", "eval_ro":
		f, ok := shebangFlags(string(args[1]))
		if !ok {
			return false
		}
		flags = f
	case "evalsha", "evalsha_ro":
		body, found := s.scripts.get(strings.ToLower(string(args[1])))
		f, ok := shebangFlags(body)
		if !found || !ok {
			return false
		}
		flags = f
	case "fcall", "fcall_ro":
		_, _, meta, ok := s.functions.function(string(args[1]))
		if !ok {
			return false
		}
		flags = meta.flags
	default:
		return false
	}
	return flags&(flagNoWrites|flagAllowOOM) == 0
}

// shebangFlags returns the flags of a script's shebang line; false for a script
// without one (or with one Redis refuses: it fails as it runs).
func shebangFlags(body string) (funcFlags, bool) {
	if !strings.HasPrefix(body, "#!") {
		return 0, false
	}
	flags, _, msg := scriptShebang(body)
	return flags, msg == ""
}
