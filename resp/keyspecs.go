package resp

import (
	"slices"
	"strconv"
	"strings"

	"github.com/nanokv/nanokv/kvstore"
)

// keySpec is one of a Redis command's key specifications (COMMAND INFO's ninth
// element): where its search for keys begins (an argument index, or the argument after
// a keyword searched for from startfrom) and how it finds them from there (a range, or
// a count given in an argument). redisKeySpecs holds Redis 7.0's.
type keySpec struct {
	notes string
	flags string // Redis's names, in its order: "RW access update"
	// begin_search: "index" at pos, "keyword" searched from pos (startfrom), "unknown"
	bs      string
	pos     int
	keyword string
	// find_keys: "range" (n = lastkey, keystep, limit), "keynum" (n = keynumidx,
	// firstkey, keystep) or "unknown"
	fk string
	n  [3]int
}

// keyFlags are a key specification's flags as a set.
type keyFlags uint16

const (
	keyRO keyFlags = 1 << iota
	keyRW
	keyOW
	keyRM
	keyAccess
	keyUpdate
	keyInsert
	keyDelete
	keyNotKey
	keyIncomplete
	keyVariableFlags
)

var keyFlagNames = []string{"RO", "RW", "OW", "RM", "access", "update", "insert", "delete",
	"not_key", "incomplete", "variable_flags"}

func parseKeyFlags(s string) keyFlags {
	var f keyFlags
	for _, w := range strings.Fields(s) {
		for i, name := range keyFlagNames {
			if w == name {
				f |= 1 << i
			}
		}
	}
	return f
}

func (f keyFlags) names() []string {
	var out []string
	for i, name := range keyFlagNames {
		if f&(1<<i) != 0 {
			out = append(out, name)
		}
	}
	return out
}

// read and write are the ACL permissions a key used so needs (Redis's
// ACLSelectorCheckKey): read to access its value, write to insert, update or delete.
func (f keyFlags) read() bool  { return f&keyAccess != 0 }
func (f keyFlags) write() bool { return f&(keyInsert|keyUpdate|keyDelete) != 0 }

// redisKeyFlags are the flags of redisKeySpecs, parsed.
var redisKeyFlags = func() map[string][]keyFlags {
	m := make(map[string][]keyFlags, len(redisKeySpecs))
	for name, specs := range redisKeySpecs {
		for _, sp := range specs {
			m[name] = append(m[name], parseKeyFlags(sp.flags))
		}
	}
	return m
}()

// keyRef is a key argument of a call and what the command does with it.
type keyRef struct {
	key   []byte
	flags keyFlags
	pos   int // its argument's index
}

// specKeys finds the keys of a call (args[0] the command) as Redis's
// getKeysUsingKeySpecs does: ok is false when a specification cannot be followed (an
// unknown one, an incomplete one, a count that is not one, keys past the end).
func specKeys(specs []keySpec, specFlags []keyFlags, args [][]byte) (refs []keyRef, ok bool) {
	argc := len(args)
	for j, sp := range specs {
		flags := specFlags[j]
		if flags&keyNotKey != 0 {
			continue
		}
		first := 0
		switch sp.bs {
		case "index":
			first = sp.pos
		case "keyword":
			start, end := sp.pos, argc-1
			if sp.pos <= 0 {
				start, end = argc+sp.pos, 1
			}
			for i := start; i != end; {
				if i >= argc || i < 1 {
					break
				}
				if strings.EqualFold(string(args[i]), sp.keyword) {
					first = i + 1
					break
				}
				if start <= end {
					i++
				} else {
					i--
				}
			}
			if first == 0 {
				continue // no keyword, no keys
			}
		default:
			return nil, false
		}
		var last, step int
		switch sp.fk {
		case "range":
			lastkey, limit := sp.n[0], sp.n[2]
			step = sp.n[1]
			switch {
			case lastkey >= 0:
				last = first + lastkey
			case limit == 0:
				last = argc + lastkey
			default:
				last = first + ((argc-first)/limit + lastkey)
			}
		case "keynum":
			idx := first + sp.n[0]
			if idx >= argc {
				return nil, false
			}
			n, err := strconv.ParseInt(string(args[idx]), 10, 64)
			if err != nil || n < 0 || n > int64(argc) {
				return nil, false
			}
			first += sp.n[1]
			last = first + int(n) - 1
			step = sp.n[2]
		default:
			return nil, false
		}
		if last >= argc || last < first || first >= argc || step < 1 {
			return nil, false
		}
		for i := first; i <= last; i += step {
			refs = append(refs, keyRef{args[i], flags, i})
		}
		if flags&keyIncomplete != 0 {
			return nil, false
		}
	}
	return refs, true
}

// numkeysCommands are where Redis's genericGetKeys finds the keys of the commands that
// name a count of keys, when their specifications fail: the destination's position (0:
// none), the count's, the first key's.
var numkeysCommands = map[string][3]int{
	"zunionstore": {1, 2, 3}, "zinterstore": {1, 2, 3}, "zdiffstore": {1, 2, 3},
	"zunion": {0, 1, 2}, "zinter": {0, 1, 2}, "zdiff": {0, 1, 2},
	"zintercard": {0, 1, 2}, "sintercard": {0, 1, 2},
	"eval": {0, 2, 3}, "evalsha": {0, 2, 3}, "eval_ro": {0, 2, 3}, "evalsha_ro": {0, 2, 3},
	"fcall": {0, 2, 3}, "fcall_ro": {0, 2, 3},
	"lmpop": {0, 1, 2}, "zmpop": {0, 1, 2}, "blmpop": {0, 2, 3}, "bzmpop": {0, 2, 3},
}

// procKeys finds the keys of a call as the command's own function in Redis does
// (getkeys_proc), for the commands whose specifications vary with the arguments or
// failed; ok is false for a command that has none.
func procKeys(name string, args [][]byte) (refs []keyRef, ok bool) {
	if !hasProcKeys(name) {
		return nil, false
	}
	if len(args) < 2 {
		return nil, true // the arity check refuses the call
	}
	switch name {
	case "set":
		// SET ... GET reads the old value
		flags := keyOW | keyUpdate
		for _, a := range args[min(3, len(args)):] {
			if strings.EqualFold(string(a), "get") {
				flags = keyRW | keyAccess | keyUpdate
				break
			}
		}
		return []keyRef{{args[1], flags, 1}}, true
	case "bitfield":
		// only GETs (and OVERFLOW) read; anything else, or a syntax error, writes
		flags := keyRO | keyAccess
		for i := 2; i < len(args); i++ {
			rem := len(args) - i - 1
			op := strings.ToLower(string(args[i]))
			if op == "get" && rem >= 2 {
				i += 2
			} else if op == "overflow" && rem >= 1 {
				i++
			} else {
				flags = keyRW | keyAccess | keyUpdate
				break
			}
		}
		return []keyRef{{args[1], flags, 1}}, true
	case "sort", "sort_ro":
		refs = []keyRef{{args[1], keyRO | keyAccess, 1}}
		if name == "sort_ro" {
			return refs, true
		}
		// the last STORE names the destination; LIMIT, GET and BY take arguments
		store := 0
		for i := 2; i < len(args); i++ {
			switch strings.ToLower(string(args[i])) {
			case "limit":
				i += 2
			case "get", "by":
				i++
			case "store":
				if i+1 < len(args) {
					store = i + 1
				}
			}
		}
		if store > 0 {
			refs = append(refs, keyRef{args[store], keyOW | keyUpdate, store})
		}
		return refs, true
	}
	at := numkeysCommands[name]
	// atoi's reading of the count, as Redis's: leading digits, 0 when none
	n := 0
	if at[1] < len(args) {
		a := args[at[1]]
		neg := len(a) > 0 && a[0] == '-'
		if neg || len(a) > 0 && a[0] == '+' {
			a = a[1:]
		}
		for _, ch := range a {
			if ch < '0' || ch > '9' || n > len(args) {
				break
			}
			n = n*10 + int(ch-'0')
		}
		if neg {
			n = -n
		}
	}
	if n < 1 || n > len(args)-at[2] {
		return nil, true
	}
	// without flags, as Redis 7.0's genericGetKeys gives them
	for i := 0; i < n; i++ {
		refs = append(refs, keyRef{args[at[2]+i], 0, at[2] + i})
	}
	if at[0] > 0 {
		refs = append(refs, keyRef{args[at[0]], 0, at[0]})
	}
	return refs, true
}

// hasProcKeys: procKeys knows the command's own rules.
func hasProcKeys(name string) bool {
	switch name {
	case "set", "bitfield", "sort", "sort_ro":
		return true
	}
	_, ok := numkeysCommands[name]
	return ok
}

// callKeys are the keys of a call of spec s (args[0] the command, name the command or
// "container|subcommand" as Redis names it) and what it does with each, as Redis's
// getKeysFromCommandWithSpecs finds them: by the specifications when they hold and do
// not vary with the arguments, else by the command's own function. A command of
// nanokv's own reports the keys of its spec, read (and written, if it writes).
func callKeys(name string, s *kvstore.Spec, args [][]byte) []keyRef {
	specs, redis := redisKeySpecs[name]
	if !redis {
		if _, known := redisMeta[name]; known {
			return nil
		}
		flags := keyRO | keyAccess
		if s.Writes(args) {
			flags = keyRW | keyAccess | keyUpdate
		}
		var refs []keyRef
		for _, k := range s.Keys(nil, args) {
			refs = append(refs, keyRef{k, flags, argIndex(args, k)})
		}
		return refs
	}
	var all keyFlags
	keyed := false
	for _, f := range redisKeyFlags[name] {
		all |= f
		keyed = keyed || f&keyNotKey == 0
	}
	if keyed && all&keyVariableFlags == 0 {
		if refs, ok := specKeys(specs, redisKeyFlags[name], args); ok {
			return refs
		}
	}
	refs, _ := procKeys(name, args)
	return refs
}

// callName is the name of a call of spec s as Redis names its command: the container's
// and subcommand's ("object|encoding") for a subcommand nanokv knows, else the command's.
func callName(s *kvstore.Spec, args [][]byte) string {
	if subs := aclCommands().subs[s.Name]; len(subs) > 0 && len(args) > 1 {
		if full := s.Name + "|" + strings.ToLower(string(args[1])); slices.Contains(subs, full) {
			return full
		}
	}
	return s.Name
}

// hasKeys is Redis's doesCommandHaveKeys: the command has a function that finds keys,
// or a specification of real keys.
func hasKeys(name string, s *kvstore.Spec) bool {
	_, redis := redisKeySpecs[name]
	if !redis {
		if _, known := redisMeta[name]; known {
			return false
		}
		return s.FirstKey > 0 || s.MoreKeys != nil
	}
	if hasProcKeys(name) {
		return true
	}
	for _, f := range redisKeyFlags[name] {
		if f&keyNotKey == 0 {
			return true
		}
	}
	return false
}

// argIndex is the index of the argument key is (a slice of it, as Spec.Keys returns),
// or of the first argument equal to it.
func argIndex(args [][]byte, key []byte) int {
	for i, a := range args {
		if len(a) > 0 && len(key) > 0 && &a[0] == &key[0] {
			return i
		}
	}
	for i, a := range args {
		if string(a) == string(key) {
			return i
		}
	}
	return 0
}
