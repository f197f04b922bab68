package kvstore

// MemoryUsageSpec is MEMORY USAGE key [SAMPLES count], for the frontend's MEMORY (a
// connection command, whose other subcommands touch no key): the bytes the key holds,
// by nanokv's own accounting. That is its key table entry (with the key, when it is too
// long for the entry), the value and, for a collection, what its memUsage counts; not
// Redis's allocator figures. SAMPLES is checked as Redis checks it and ignored: nothing
// is sampled.
var MemoryUsageSpec = &Spec{Name: "memory|usage", Arity: -3, Flags: FlagReadOnly, FirstKey: 2, LastKey: 2, Step: 1,
	Group: "server", Since: "4.0.0", Summary: "Estimate the memory usage of a key", Run: memoryUsageCmd}

func memoryUsageCmd(c *Ctx, args [][]byte) {
	for j := 3; j < len(args); j++ {
		if !eq(args[j], "samples") || j+1 == len(args) {
			c.Error(ErrSyntax)
			return
		}
		n, ok := c.parseIntArg(args[j+1])
		if !ok {
			return
		}
		if n < 0 {
			c.Error(ErrSyntax)
			return
		}
		j++
	}
	key := args[2]
	c.noTouch = true // as Redis, which finds the key without a lookup
	it, ok := c.lookup(key)
	if !ok {
		c.W.Null()
		return
	}
	c.W.Int(int64(usage(len(key), it)))
}
