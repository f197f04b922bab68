package zkproto

import (
	"strings"
	"sync"

	"github.com/nanokv/nanokv/kvstore"
)

// Watches are local to the member a client is connected to, as in ZooKeeper: they belong
// to the connection, are triggered when this member applies a change, and a client that
// reconnects (here or to another member) sets them again with setWatches.
//
// ZooKeeper's server keeps two tables (WatchManager): data watches, set by getData and
// by exists (also on a missing node: that is the "exist watch"), and child watches, set by
// getChildren. addWatch sets persistent watches, which stay after they fire, in either
// table (PERSISTENT), or recursive ones that fire for a node and all its descendants
// (PERSISTENT_RECURSIVE, never for NodeChildrenChanged).
type watchKind uint8

const (
	watchData watchKind = 1 << iota
	watchChild
	watchPersistent
	watchRecursive
)

// addWatch modes (AddWatchMode).
const (
	addWatchPersistent          int32 = 0
	addWatchPersistentRecursive int32 = 1
)

// checkWatches/removeWatches types (WatcherType).
const (
	watcherChildren int32 = 1
	watcherData     int32 = 2
	watcherAny      int32 = 3
)

// watchManager is the member's table of watches: path → connection → kinds.
type watchManager struct {
	mu        sync.Mutex
	byPath    map[string]map[*conn]watchKind
	recursive int // how many recursive watches exist: the ancestors are walked only then
}

func newWatchManager() *watchManager {
	return &watchManager{byPath: map[string]map[*conn]watchKind{}}
}

func (m *watchManager) add(path string, c *conn, k watchKind) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.byPath[path]
	if w == nil {
		w = map[*conn]watchKind{}
		m.byPath[path] = w
	}
	if k&watchRecursive != 0 && w[c]&watchRecursive == 0 {
		m.recursive++
	}
	w[c] |= k
}

// has reports whether c has a watch of a kind in k on path.
func (m *watchManager) has(path string, c *conn, k watchKind) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byPath[path][c]&k != 0
}

// remove drops c's watches of the kinds in k on path; it reports whether there were any.
func (m *watchManager) remove(path string, c *conn, k watchKind) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.byPath[path]
	had := w[c] & k
	if had == 0 {
		return false
	}
	m.drop(path, w, c, had)
	return true
}

func (m *watchManager) drop(path string, w map[*conn]watchKind, c *conn, k watchKind) {
	if w[c]&k&watchRecursive != 0 {
		m.recursive--
	}
	if w[c] &^= k; w[c] == 0 {
		delete(w, c)
		if len(w) == 0 {
			delete(m.byPath, path)
		}
	}
}

// removeConn drops every watch of a closed connection.
func (m *watchManager) removeConn(c *conn, paths []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range paths {
		if w := m.byPath[p]; w != nil && w[c] != 0 {
			m.drop(p, w, c, w[c])
		}
	}
}

// counts returns the number of connections watching, paths watched and watches (wchs).
func (m *watchManager) counts() (conns, paths, watches int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[*conn]bool{}
	for _, w := range m.byPath {
		for c, k := range w {
			seen[c] = true
			for b := watchData; b <= watchRecursive; b <<= 1 {
				if k&b != 0 {
					watches++
				}
			}
		}
	}
	return len(seen), len(m.byPath), watches
}

// trigger delivers one applied change. It runs on the applier while the store's tree is
// locked, so it only queues notifications.
func (m *watchManager) trigger(ev kvstore.ZKEvent) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var fired map[*conn]bool // a connection gets one notification per event
	fire := func(c *conn) {
		if fired == nil {
			fired = map[*conn]bool{}
		}
		if !fired[c] {
			fired[c] = true
			c.notify(ev.Type, ev.Path)
		}
	}
	// The standard tables: data watches fire on created, deleted and data changed; child
	// watches on children changed and deleted. They fire once.
	var mask watchKind
	switch ev.Type {
	case kvstore.ZKEventNodeCreated, kvstore.ZKEventNodeDataChanged:
		mask = watchData
	case kvstore.ZKEventNodeDeleted:
		mask = watchData | watchChild
	case kvstore.ZKEventNodeChildrenChanged:
		mask = watchChild
	default:
		return
	}
	// A persistent watch sits in both tables: it sees every event on its path.
	if w := m.byPath[ev.Path]; w != nil {
		for c, k := range w {
			if k&(mask|watchPersistent) != 0 {
				fire(c)
			}
			if k&mask != 0 {
				m.drop(ev.Path, w, c, k&mask)
			}
		}
	}
	// Recursive watches on the path and its ancestors, never for children changed.
	if m.recursive == 0 || ev.Type == kvstore.ZKEventNodeChildrenChanged {
		return
	}
	for p := ev.Path; ; p = parentPath(p) {
		for c, k := range m.byPath[p] {
			if k&watchRecursive != 0 {
				fire(c)
			}
		}
		if p == "/" {
			return
		}
	}
}

// parentPath is the parent of a znode path ("/" for a child of the root and for "/").
func parentPath(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}
