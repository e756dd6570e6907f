package aggregate

import (
	"sync"
	"sync/atomic"
)

// cache keeps the latest states of the Objects a partition handler owns, so
// that a store read happens only on a miss. It is used by one goroutine.
//
// Between batches an entry holds its object's encoded state (the bytes the
// store holds, 40–190 bytes, against about 1.2 KB for a decoded Object), so
// that a cached object costs about 300 bytes of heap in all (issue 13: at
// most 400). A batch decodes the objects it touches into pooled Objects
// (entry.obj, set by load), works on them in place, and hands them back
// with their new encoding (store) or unchanged (release). Each entry
// records the batch (seq) that last changed it, which may not be committed
// yet. The cache may exceed its limits until trim evicts the least
// recently used entries (a doubly linked list over map entries), handing
// each to the caller before its memory is reused by a later add.
//
// Two limits apply: objects (per partition, Config.CacheObjects) and bytes
// (Config.CacheBytes, for the whole process: the caches of all the
// partitions a Processor owns share one budget, each keeping at most its
// share, the budget divided by the number of partition caches).
type cache struct {
	limit      int // objects; 0: unbounded
	budget     *cacheBudget
	bytes      int64 // accounted bytes of this cache's entries
	m          map[string]*entry
	head, tail *entry // head: most recently used
	free       []*entry
	mark       uint32 // the last batch mark handed out (nextMark); never 0
}

// cacheBudget is what the caches of one Processor share: the byte budget
// and the pool of decoded Objects.
type cacheBudget struct {
	limit  int64 // 0: unbounded
	used   atomic.Int64
	caches atomic.Int64
	// objects pools the decoded Objects (about 1.2 KB each) that batches
	// work on. A batch decodes up to BatchSize objects at once and hands
	// them back when it is encoded; a sync.Pool lets every partition reuse
	// them without an idle partition holding any (the pool is emptied over
	// two garbage collections), where a bounded pool per cache allocated
	// most of a large batch's Objects anew.
	objects sync.Pool
}

// share is the bytes one of the caches may keep.
func (b *cacheBudget) share() int64 {
	n := b.caches.Load()
	if b.limit <= 0 || n <= 0 {
		return b.limit
	}
	return b.limit / n
}

type entry struct {
	name       string
	seq        uint64  // the batch that last changed the object
	enc        []byte  // the object's encoded state; empty: a new object
	obj        *Object // decoded, while a batch works on it; nil between batches
	prev, next *entry
	// mark is the cache mark (nextMark) of the last batch that indexed
	// the entry, slot its index in that batch's objects; 0: none.
	mark uint32
	slot int32
	// refreshed is when the last write of the object that refreshed its
	// expiry in the store was prepared (Unix seconds, the batch's start);
	// 0: none since the entry was made (expiry.go).
	refreshed uint32
}

// EntryOverheadBytes is what the cache accounts for one cached object
// besides its name and its encoded state: the map slot (key string header
// and pointer, at the map's load factor), the entry (name and slice
// headers, batch number, LRU links, batch mark and slot, expiry refresh
// time: 84 bytes, in the 96-byte allocation class) and the allocation
// slack of the name and of the encoding. BenchmarkCacheBytesPerObject
// reports it beside the heap measured after caching 200,000 objects.
const EntryOverheadBytes = 166

// entryBytes is the accounted size of e.
func entryBytes(e *entry) int64 {
	return EntryOverheadBytes + int64(len(e.name)) + int64(cap(e.enc))
}

func newCache(limit int, budget *cacheBudget) *cache {
	if budget == nil {
		budget = &cacheBudget{}
	}
	budget.caches.Add(1)
	return &cache{limit: limit, budget: budget, m: map[string]*entry{}}
}

// close gives the cache's bytes and its share back to the budget.
func (c *cache) close() {
	c.clear()
	c.budget.caches.Add(-1)
}

func (c *cache) len() int { return len(c.m) }

func (c *cache) account(delta int64) {
	c.bytes += delta
	c.budget.used.Add(delta)
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

// nextMark returns a new batch mark, one no entry holds: when the
// counter wraps (after 2³² batches), every entry's mark is cleared.
func (c *cache) nextMark() uint32 {
	c.mark++
	if c.mark == 0 {
		for _, e := range c.m {
			e.mark = 0
		}
		c.mark = 1
	}
	return c.mark
}

// add inserts an entry for name (which must not be cached) with no state
// and seq 0, as the most recently used. It does not evict.
func (c *cache) add(name string) *entry {
	var e *entry
	if n := len(c.free); n > 0 {
		e = c.free[n-1]
		c.free = c.free[:n-1]
	} else {
		e = &entry{}
	}
	e.name, e.mark = name, 0
	c.m[name] = e
	c.pushFront(e)
	c.account(entryBytes(e))
	return e
}

// setEnc makes enc (owned by the cache from now on) e's encoded state.
func (c *cache) setEnc(e *entry, enc []byte) {
	c.account(int64(cap(enc)) - int64(cap(e.enc)))
	e.enc = enc
}

// load decodes e's state into a pooled Object (a zero Object for a new
// one) and returns it; it stays e.obj until store or release. An encoding
// that does not decode is returned as the error, with a zero Object.
func (c *cache) load(e *entry) (*Object, error) {
	if e.obj != nil {
		return e.obj, nil
	}
	o, _ := c.budget.objects.Get().(*Object)
	if o == nil {
		o = new(Object)
	}
	e.obj = o
	if len(e.enc) == 0 {
		*o = Object{}
		return o, nil
	}
	if err := o.DecodeBinary(e.enc); err != nil {
		*o = Object{}
		return o, err
	}
	return o, nil
}

// store keeps enc, the new encoding of e.obj, in e (reusing e's buffer
// when it is large enough) and returns e.obj to the pool.
func (c *cache) store(e *entry, enc []byte) {
	if cap(e.enc) >= len(enc) && cap(e.enc) <= 2*len(enc)+16 {
		e.enc = append(e.enc[:0], enc...)
	} else {
		c.setEnc(e, append(make([]byte, 0, len(enc)), enc...))
	}
	c.release(e)
}

// release returns e.obj, unchanged, to the pool.
func (c *cache) release(e *entry) {
	if e.obj != nil {
		c.budget.objects.Put(e.obj)
		e.obj = nil
	}
}

// over reports whether the cache is above its limits.
func (c *cache) over() bool {
	if c.limit > 0 && len(c.m) > c.limit {
		return true
	}
	return c.budget.limit > 0 && c.bytes > c.budget.share()
}

// trim evicts least recently used entries until the limits hold, calling
// evicted for each before its entry is reused; evicted may take e.enc (it
// is not reused).
func (c *cache) trim(evicted func(e *entry)) {
	for len(c.m) > 0 && c.over() {
		e := c.tail
		c.unlink(e)
		delete(c.m, e.name)
		c.release(e)
		evicted(e)
		c.account(-entryBytes(e))
		e.name, e.enc, e.seq, e.mark, e.refreshed = "", nil, 0, 0, 0
		c.free = append(c.free, e)
	}
}

func (c *cache) clear() {
	c.account(-c.bytes)
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
