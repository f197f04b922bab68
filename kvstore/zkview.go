package kvstore

// ZKView reads the ZooKeeper tree while its lock is held (Store.ZKView). A frontend reads
// and registers a watch inside one view: the applier, which hands over watch events while
// it holds the same lock, can then never slip a change (and its event) in between the
// read and the registration — the ordering ZooKeeper gets from applying and reading on
// one thread.
type ZKView struct{ t *zkTree }

// ZKView calls fn with a view of the tree, the tree read-locked meanwhile. fn must not
// call the Store's other ZK methods (the lock is not reentrant) and must not block.
func (s *Store) ZKView(fn func(v *ZKView)) {
	t := &s.zk
	t.mu.RLock()
	defer t.mu.RUnlock()
	fn(&ZKView{t: t})
}

// Get returns the node at path.
func (v *ZKView) Get(path string) (ZKNode, bool) {
	n := v.t.nodes[path]
	if n == nil {
		return ZKNode{}, false
	}
	return n.view(), true
}

// Children returns the node at path and its children's names, sorted.
func (v *ZKView) Children(path string) (names []string, node ZKNode, ok bool) {
	n := v.t.nodes[path]
	if n == nil {
		return nil, ZKNode{}, false
	}
	return n.children.Keys(), n.view(), true
}

// AllChildrenNumber counts every descendant of the node at path.
func (v *ZKView) AllChildrenNumber(path string) (int32, bool) {
	return v.t.allChildrenNumber(path)
}
