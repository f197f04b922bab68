package kvstore

// Client-side caching (Redis's CLIENT TRACKING) needs to hear of every key a write
// changes, as Redis's signalModifiedKey tells its tracking table, and of every flush. The
// applier tells a KeyTracker: every member applies every write, so each member
// invalidates the caches of its own clients, whichever member the write came through.
//
// The calls sit where a key's version moves (the version WATCH compares), so what
// invalidates a cached key is what fires a WATCH on it. A change Redis makes without
// signalling the key (a string unshared, PFDEBUG's conversions: putQuietly) invalidates
// nothing here either.

// KeyTracker hears, on the applier, of the changes client-side caching invalidates on.
// The calls must only queue, never wait for a client.
type KeyTracker interface {
	// Modified tells that key changed (in any database: Redis's tracking table ignores
	// them). w is the reply writer of the entry that changed it, which tells whose write
	// it was (NOLOOP); Discard when its replies go nowhere.
	Modified(key []byte, w ReplyWriter)
	// Flushed tells that any key may have changed at once: FLUSHALL, FLUSHDB, SWAPDB, a
	// snapshot installed.
	Flushed()
	// EntryDone ends an entry: what was queued for it may go out together.
	EntryDone()
}

// trackerBox holds a KeyTracker in an atomic.Pointer.
type trackerBox struct{ t KeyTracker }

// SetKeyTracker sets who hears of changed keys (nil: nobody). The frontend sets it when
// its first client turns tracking on: until then the applier pays one atomic load a
// change.
func (s *Store) SetKeyTracker(t KeyTracker) {
	if t == nil {
		s.tracker.Store(nil)
		return
	}
	s.tracker.Store(&trackerBox{t})
}

// modified tells the key tracker that the applier changed key.
func (c *Ctx) modified(key []byte) {
	if b := c.s.tracker.Load(); b != nil && c.writing {
		b.t.Modified(key, c.W)
	}
}

// flushed tells the key tracker that every key may have changed.
func (c *Ctx) flushed() {
	if b := c.s.tracker.Load(); b != nil && c.writing {
		b.t.Flushed()
	}
}
