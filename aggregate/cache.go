package aggregate

// cache keeps the latest states of the Objects a partition handler owns, so
// that a store read happens only on a miss. It is used by one goroutine.
// Callers work on the cached objects in place through the entries that
// entry and add return; each entry records the batch (seq) that last
// changed it, which may not be committed yet. The cache may exceed its
// limit until trim evicts the least recently used entries (a doubly linked
// list over map entries), handing each to the caller before its memory is
// reused by a later add.
type cache struct {
	limit      int // 0: unbounded
	m          map[string]*entry
	head, tail *entry // head: most recently used
	free       []*entry
}

type entry struct {
	name       string
	seq        uint64 // the batch that last changed obj
	obj        Object
	prev, next *entry
}

func newCache(limit int) *cache { return &cache{limit: limit, m: map[string]*entry{}} }

func (c *cache) len() int { return len(c.m) }

// get returns name's cached object, marking it recently used.
func (c *cache) get(name string) (*Object, bool) {
	e, ok := c.entry(name)
	if !ok {
		return nil, false
	}
	return &e.obj, true
}

// entry returns name's entry, marking it recently used.
func (c *cache) entry(name string) (*entry, bool) {
	e, ok := c.m[name]
	if !ok {
		return nil, false
	}
	c.moveFront(e)
	return e, true
}

// add inserts an entry for name (which must not be cached) with a zero
// object and seq, as the most recently used. It does not evict.
func (c *cache) add(name string) *entry {
	var e *entry
	if n := len(c.free); n > 0 {
		e = c.free[n-1]
		c.free = c.free[:n-1]
		e.obj, e.seq = Object{}, 0
	} else {
		e = &entry{}
	}
	e.name = name
	c.m[name] = e
	c.pushFront(e)
	return e
}

// trim evicts least recently used entries until the limit holds, calling
// evicted for each before its entry is reused.
func (c *cache) trim(evicted func(e *entry)) {
	for c.limit > 0 && len(c.m) > c.limit {
		e := c.tail
		c.unlink(e)
		delete(c.m, e.name)
		evicted(e)
		e.name = ""
		c.free = append(c.free, e)
	}
}

func (c *cache) clear() {
	c.m = map[string]*entry{}
	c.head, c.tail, c.free = nil, nil, nil
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
