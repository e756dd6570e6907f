package aggregate

import (
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/changerate/changerate/internal/idtable"
	"github.com/changerate/changerate/state"
)

// cache keeps the latest states of the Objects a partition handler owns, so
// that a store read happens only on a miss. It is used by one goroutine.
//
// Between batches an entry holds its object's encoded state (the bytes the
// store holds, 40–190 bytes, against about 1.2 KB for a decoded Object), so
// that a cached object costs about 250 bytes of heap in all (issue 13: at
// most 400). A batch decodes the objects it touches into pooled Objects
// (load), works on them, and hands them back with their new encoding
// (store) or unchanged (release). Each entry records the batch (seq) that
// last changed it, which may not be committed yet. The cache may exceed
// its limits until trim evicts the least recently used entries, handing
// each to the caller before its memory is reused by a later add.
//
// Nothing in the cache's storage holds a pointer per object: the entries
// are in chunks of entryChunk (found by id, linked in LRU order by id), an
// open-addressing table finds an entry by name, and each entry's name and
// encoded state are one slot of the cache's slab (cache_slab.go). So the
// garbage collector neither marks nor scans the cached objects, which
// with a map of entries with their own names and encodings it did three
// or four times per object in every cycle; an *entry stays valid until its
// entry is evicted (trim) or the cache cleared.
//
// Two limits apply: objects (per partition, Config.CacheObjects) and bytes
// (Config.CacheBytes, for the whole process: the caches of all the
// partitions a Processor owns share one budget, each keeping at most its
// share, the budget divided by the number of partition caches).
type cache struct {
	limit      int // objects; 0: unbounded
	budget     *cacheBudget
	bytes      int64 // accounted bytes of this cache's entries
	seed       maphash.Seed
	table      idtable.Table        // entry ids by their names' hashes (seed); Len: entries cached
	chunks     []*[entryChunk]entry // entry id i is chunks[i/entryChunk][i%entryChunk]
	free       []int32              // ids of evicted entries, reused by add
	head, tail int32                // head: most recently used; -1: none
	mem        slab
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
	// chunks pools the batches' Objects by objectChunk (batchObjects),
	// as objects does one by one for emitFinal.
	chunks sync.Pool
}

// share is the bytes one of the caches may keep.
func (b *cacheBudget) share() int64 {
	n := b.caches.Load()
	if b.limit <= 0 || n <= 0 {
		return b.limit
	}
	return b.limit / n
}

// entry is one cached object (64 bytes, no pointer).
type entry struct {
	seq uint64  // the batch that last changed the object
	ref slabRef // the slot holding the name, then the encoded state
	// digest is the name's state.Digest (zero: not known), computed once
	// when the object is read from the store and passed with each of its
	// writes: the store would hash the name at every commit (SHA-256 of a
	// URL, 4–8 % of the aggregator's CPU in the live shape). It fills the
	// 64 bytes the entry's other fields leave (52 of them, padded to 56).
	digest state.Digest
	// nameLen and encLen are the lengths of the name and of the encoded
	// state (0: a new object) in the slot.
	nameLen, encLen uint32
	tag             uint32 // the low 32 bits of the name's hash (cache.seed)
	id              int32
	prev, next      int32 // LRU neighbours' ids; -1: none
	// mark is the cache mark (nextMark) of the last batch that indexed
	// the entry, slot its index in that batch's objects; 0: none.
	mark uint32
	slot int32
	// refreshed is when the last write of the object that refreshed its
	// expiry in the store was prepared (Unix seconds, the batch's start);
	// 0: none since the entry was made (expiry.go).
	refreshed uint32
}

// entryChunk is the number of entries allocated together.
const entryChunk = 1024

// EntryOverheadBytes is what the cache accounts for one cached object
// besides the slab slot of its name and encoded state: the entry (64
// bytes), its table slot (8 bytes at a load of 4/5 to 2/5: 10 to 20 bytes),
// its slot's owner id (4 bytes) and its share of the slots left free in
// its class until the next compaction. BenchmarkCacheBytesPerObject reports
// it beside the heap measured after caching 200,000 objects.
const EntryOverheadBytes = 100

// entryBytes is the accounted size of e.
func entryBytes(c *cache, e *entry) int64 {
	return EntryOverheadBytes + int64(c.mem.size(e.ref))
}

func newCache(limit int, budget *cacheBudget) *cache {
	if budget == nil {
		budget = &cacheBudget{}
	}
	budget.caches.Add(1)
	return &cache{limit: limit, budget: budget, seed: maphash.MakeSeed(), head: -1, tail: -1}
}

// close gives the cache's bytes and its share back to the budget.
func (c *cache) close() {
	c.clear()
	c.budget.caches.Add(-1)
}

func (c *cache) len() int { return c.table.Len() }

func (c *cache) account(delta int64) {
	c.bytes += delta
	c.budget.used.Add(delta)
}

// at is the entry of id.
func (c *cache) at(id int32) *entry { return &c.chunks[id/entryChunk][id%entryChunk] }

// nameBytes is e's name in its slot (valid until e's slot changes).
func (c *cache) nameBytes(e *entry) []byte { return c.mem.bytes(e.ref)[:e.nameLen] }

// name is a copy of e's name.
func (c *cache) name(e *entry) string { return string(c.nameBytes(e)) }

// enc is e's encoded state in its slot, empty for a new object: valid
// until e's next store, setEnc or eviction (copy it to keep it).
func (c *cache) enc(e *entry) []byte {
	return c.mem.bytes(e.ref)[e.nameLen : e.nameLen+e.encLen : e.nameLen+e.encLen]
}

// find returns the id of name's entry (hash h), -1 if it is not cached, and
// the table position where it is or would be put.
func (c *cache) find(name string, h uint64) (int32, uint64) {
	return c.table.Find(h, func(id int32) bool { return string(c.nameBytes(c.at(id))) == name })
}

// hash is the hash of name in c's table.
func (c *cache) hash(name string) uint64 { return maphash.String(c.seed, name) }

// prefetch touches what the lookups of the names with hashes hs will
// read — their table positions, then the entries found there, then
// their slots (name and encoded state) — one step for all of them at a
// time: each step's loads do not depend on one another, so their cache
// misses overlap, where a lookup's misses follow one another (at 100,000
// objects a partition's table, entries and slab are far beyond the CPU's
// caches). The result is returned only so that the loads are not
// dropped.
func (c *cache) prefetch(hs []uint64) (sum uint64) {
	var ids [prefetchRun]int32
	hs = hs[:min(len(hs), prefetchRun)]
	for i, h := range hs {
		ids[i] = c.table.Peek(h)
	}
	for i, id := range ids[:len(hs)] {
		if id >= 0 {
			if e := c.at(id); e.tag == uint32(hs[i]) {
				sum += uint64(e.ref)
				continue
			}
		}
		ids[i] = -1
	}
	for _, id := range ids[:len(hs)] {
		if id >= 0 {
			if b := c.mem.bytes(c.at(id).ref); len(b) > 0 {
				sum += uint64(b[0])
			}
		}
	}
	return sum
}

// prefetchRun is the most lookups prefetch prepares at once.
const prefetchRun = 32

// entry returns name's entry, marking it recently used.
func (c *cache) entry(name string) (*entry, bool) { return c.entryHash(name, c.hash(name)) }

// entryHash is entry with name's hash h.
func (c *cache) entryHash(name string, h uint64) (*entry, bool) {
	id, _ := c.find(name, h)
	if id < 0 {
		return nil, false
	}
	e := c.at(id)
	c.moveFront(e)
	return e, true
}

// nextMark returns a new batch mark, one no entry holds: when the
// counter wraps (after 2³² batches), every entry's mark is cleared.
func (c *cache) nextMark() uint32 {
	c.mark++
	if c.mark == 0 {
		for i := range c.chunks {
			for j := range c.chunks[i] {
				c.chunks[i][j].mark = 0
			}
		}
		c.mark = 1
	}
	return c.mark
}

// add inserts an entry for name (which must not be cached), with digest d
// (state.DigestOf(name), or zero: unknown), no state and seq 0, as the
// most recently used. It does not evict.
func (c *cache) add(name string, d state.Digest) *entry {
	c.table.Grow()
	h := maphash.String(c.seed, name)
	_, p := c.find(name, h)
	var id int32
	if k := len(c.free); k > 0 {
		id = c.free[k-1]
		c.free = c.free[:k-1]
	} else {
		id = int32(c.table.Len()) // no id is free: ids 0 to Len-1 are in use
		if int(id) == len(c.chunks)*entryChunk {
			c.chunks = append(c.chunks, new([entryChunk]entry))
		}
	}
	e := c.at(id)
	ref, slot := c.mem.alloc(len(name), id)
	copy(slot, name)
	*e = entry{ref: ref, digest: d, nameLen: uint32(len(name)), tag: uint32(h), id: id, prev: -1, next: -1}
	c.table.Put(p, h, id)
	c.pushFront(e)
	c.account(entryBytes(c, e))
	return e
}

// setEnc makes a copy of enc e's encoded state, in e's slot if it fits
// there without wasting half of it, else in a new slot.
func (c *cache) setEnc(e *entry, enc []byte) {
	need := int(e.nameLen) + len(enc)
	if have := c.mem.size(e.ref); need > have || 2*slabSlotBytes(need) <= have {
		ref, slot := c.mem.alloc(need, e.id)
		copy(slot, c.nameBytes(e))
		c.mem.free(e.ref)
		e.ref = ref
		c.account(int64(len(slot) - have))
	}
	copy(c.mem.bytes(e.ref)[e.nameLen:], enc)
	e.encLen = uint32(len(enc))
}

// load decodes e's state into a pooled Object (a zero Object for a new
// one) and returns it; the caller hands it back with store or release. An
// encoding that does not decode is returned as the error, with a zero
// Object.
func (c *cache) load(e *entry) (*Object, error) {
	o, _ := c.budget.objects.Get().(*Object)
	if o == nil {
		o = new(Object)
	}
	return o, c.loadInto(e, o)
}

// loadInto is load into o, which the caller provides (a batch's
// objects: batchObjects).
func (c *cache) loadInto(e *entry, o *Object) error {
	if e.encLen == 0 {
		*o = Object{}
		return nil
	}
	if err := o.DecodeBinary(c.enc(e)); err != nil {
		*o = Object{}
		return err
	}
	return nil
}

// store keeps a copy of enc, the new encoding of obj (e's Object from
// load), in e and returns obj to the pool.
func (c *cache) store(e *entry, obj *Object, enc []byte) {
	c.setEnc(e, enc)
	c.release(obj)
}

// release returns obj, from load, unchanged to the pool.
func (c *cache) release(obj *Object) {
	if obj != nil {
		c.budget.objects.Put(obj)
	}
}

// over reports whether the cache is above its limits.
func (c *cache) over() bool {
	if c.limit > 0 && c.table.Len() > c.limit {
		return true
	}
	return c.budget.limit > 0 && c.bytes > c.budget.share()
}

// trim evicts least recently used entries until the limits hold, calling
// evicted for each before its memory is reused (evicted must copy what it
// keeps of name and enc), then compacts the slab (once per batch: the
// slots that states outgrew are given back).
func (c *cache) trim(evicted func(e *entry)) {
	for c.table.Len() > 0 && c.over() {
		e := c.at(c.tail)
		c.unlink(e)
		c.table.Delete(uint64(e.tag), e.id)
		evicted(e)
		c.account(-entryBytes(c, e))
		c.mem.free(e.ref)
		*e = entry{id: e.id}
		c.free = append(c.free, e.id)
	}
	c.mem.compact(func(id int32, to slabRef) { c.at(id).ref = to })
}

// clear drops every entry and the memory they took.
func (c *cache) clear() {
	c.account(-c.bytes)
	c.chunks, c.free, c.head, c.tail = nil, nil, -1, -1
	c.table.Reset()
	c.mem.reset()
}

// names returns a copy of the cached names.
func (c *cache) names() []string {
	out := make([]string, 0, c.table.Len())
	for id := c.head; id >= 0; {
		e := c.at(id)
		out = append(out, c.name(e))
		id = e.next
	}
	return out
}

func (c *cache) unlink(e *entry) {
	if e.prev >= 0 {
		c.at(e.prev).next = e.next
	} else {
		c.head = e.next
	}
	if e.next >= 0 {
		c.at(e.next).prev = e.prev
	} else {
		c.tail = e.prev
	}
	e.prev, e.next = -1, -1
}

func (c *cache) pushFront(e *entry) {
	e.next = c.head
	if c.head >= 0 {
		c.at(c.head).prev = e.id
	}
	c.head = e.id
	if c.tail < 0 {
		c.tail = e.id
	}
}

func (c *cache) moveFront(e *entry) {
	if c.head == e.id {
		return
	}
	c.unlink(e)
	c.pushFront(e)
}
