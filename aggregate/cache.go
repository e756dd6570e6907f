package aggregate

// cache keeps the latest states of the Objects a partition handler owns, so
// that a store read happens only on a miss. It is used by one goroutine. It
// holds copies: put copies the object, get returns a pointer to the cached
// copy, valid until the next put or clear. Each entry records the batch
// (seq) that wrote it, which may not be committed yet. When full, it evicts
// the least recently used object (a doubly linked list over map entries)
// and returns a copy of it, so that the caller can keep an uncommitted
// state until its batch is committed.
type cache struct {
	limit      int // 0: unbounded
	m          map[string]*entry
	head, tail *entry // head: most recently used
	spare      entry  // the last evicted entry, returned by put
}

type entry struct {
	name       string
	seq        uint64 // the batch that wrote obj
	obj        Object
	prev, next *entry
}

func newCache(limit int) *cache { return &cache{limit: limit, m: map[string]*entry{}} }

func (c *cache) len() int { return len(c.m) }

func (c *cache) get(name string) (*Object, bool) {
	e, ok := c.m[name]
	if !ok {
		return nil, false
	}
	c.moveFront(e)
	return &e.obj, true
}

// put stores a copy of o as name's state, written by batch seq. If that
// evicts another object, it returns a copy of its entry, valid until the
// next put; else nil.
func (c *cache) put(name string, o *Object, seq uint64) (evicted *entry) {
	if e, ok := c.m[name]; ok {
		e.obj, e.seq = *o, seq
		c.moveFront(e)
		return nil
	}
	var e *entry
	if c.limit > 0 && len(c.m) >= c.limit {
		// Reuse the least recently used entry.
		e = c.tail
		c.unlink(e)
		delete(c.m, e.name)
		c.spare.name, c.spare.seq, c.spare.obj = e.name, e.seq, e.obj
		evicted = &c.spare
	} else {
		e = &entry{}
	}
	e.name, e.seq, e.obj = name, seq, *o
	c.m[name] = e
	c.pushFront(e)
	return evicted
}

func (c *cache) clear() {
	c.m = map[string]*entry{}
	c.head, c.tail = nil, nil
}

func (c *cache) names() []string {
	out := make([]string, 0, len(c.m))
	for n := range c.m {
		out = append(out, n)
	}
	return out
}

func (c *cache) unlink(e *entry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		c.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		c.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

func (c *cache) pushFront(e *entry) {
	e.next = c.head
	if c.head != nil {
		c.head.prev = e
	}
	c.head = e
	if c.tail == nil {
		c.tail = e
	}
}

func (c *cache) moveFront(e *entry) {
	if c.head == e {
		return
	}
	c.unlink(e)
	c.pushFront(e)
}
