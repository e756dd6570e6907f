package aggregate

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/changerate/changerate/state"
)

// TestCacheBudget checks the byte accounting and the shared budget: the
// caches of one budget keep at most their share after trim, evicted
// entries hand over their encoding, and closing a cache returns its bytes.
func TestCacheBudget(t *testing.T) {
	per := int64(EntryOverheadBytes + slabSlotBytes(20+100)) // name of 20 bytes, 100-byte states
	budget := &cacheBudget{limit: 100 * per}
	a, b := newCache(0, budget), newCache(0, budget)
	fill := func(c *cache, prefix string, n int) {
		for i := 0; i < n; i++ {
			e := c.add(fmt.Sprintf("%s%019d", prefix, i), state.Digest{})
			obj, err := c.load(e)
			if err != nil {
				t.Fatal(err)
			}
			c.store(e, obj, make([]byte, 100))
		}
	}
	fill(a, "a", 80)
	if a.bytes != 80*per || budget.used.Load() != 80*per {
		t.Fatalf("accounted %d (budget %d), want %d", a.bytes, budget.used.Load(), 80*per)
	}
	var evicted int
	c := a
	a.trim(func(e *entry) {
		if len(c.enc(e)) != 100 {
			t.Errorf("evicted %s with %d bytes of state", c.name(e), len(c.enc(e)))
		}
		evicted++
	})
	if a.len() != 50 || evicted != 30 {
		t.Fatalf("after trim: %d cached, %d evicted; want 50 and 30 (half the budget each)", a.len(), evicted)
	}
	fill(b, "b", 60)
	b.trim(func(*entry) {})
	if b.len() != 50 || budget.used.Load() != 100*per {
		t.Fatalf("b: %d cached, budget used %d; want 50 and %d", b.len(), budget.used.Load(), 100*per)
	}
	// The least recently used go first.
	if _, ok := a.entry(fmt.Sprintf("a%019d", 79)); !ok {
		t.Error("the most recent entry was evicted")
	}
	if _, ok := a.entry(fmt.Sprintf("a%019d", 0)); ok {
		t.Error("the oldest entry was kept")
	}
	a.close()
	if budget.used.Load() != 50*per || budget.share() != budget.limit {
		t.Fatalf("after close: used %d, share %d", budget.used.Load(), budget.share())
	}
	b.trim(func(*entry) {})
	if b.len() != 50 {
		t.Fatalf("b alone keeps %d, want all 50", b.len())
	}
}

// TestCacheRoundTrip checks that an object stored in the cache comes back
// from load equal to the one stored.
func TestCacheRoundTrip(t *testing.T) {
	states := liveStates()[:300]
	c := newCache(0, nil)
	for i := range states {
		e := c.add(fmt.Sprint(i), state.Digest{})
		obj, _ := c.load(e)
		c.store(e, obj, states[i].AppendBinary(nil))
	}
	for i := range states {
		e, ok := c.entry(fmt.Sprint(i))
		if !ok {
			t.Fatal("lost", i)
		}
		o, err := c.load(e)
		if err != nil || *o != states[i] {
			t.Fatalf("object %d differs after the cache (err %v)", i, err)
		}
		c.release(o)
	}
}

// BenchmarkCacheBytesPerObject caches 200,000 objects of the live shape
// (daily-crawl states of 1 to 12 visits, named like crawled URLs) and
// reports the heap they take per object (heap-B/object, after a GC: the
// issue-13 budget is 400) beside what the cache accounts for them
// (accounted-B/object, which CacheBytes bounds).
func BenchmarkCacheBytesPerObject(b *testing.B) {
	states := liveStates()
	encs := make([][]byte, len(states))
	for i := range states {
		encs[i] = states[i].AppendBinary(nil)
	}
	const n = 200000
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("https://news%d.example.org/section-%d/2026/11/article-%07d.html", i%97, i%13, i)
	}
	var heap, acct float64
	for b.Loop() {
		var ms0, ms1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms0)
		c := newCache(0, nil)
		for i, name := range names {
			e := c.add(name, state.Digest{})
			obj, _ := c.load(e)
			c.store(e, obj, encs[i%len(encs)])
		}
		// The pool of decoded objects is per batch, not per cached object:
		// a sync.Pool, emptied by the two collections.
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms1)
		heap = float64(ms1.HeapAlloc-ms0.HeapAlloc) / n
		acct = float64(c.bytes) / n
		runtime.KeepAlive(c)
	}
	// The heap includes the names: the cache copies them into its slab.
	b.ReportMetric(heap, "heap-B/object")
	b.ReportMetric(acct, "accounted-B/object")
}

// TestCacheAgainstReference runs random operations on a cache and on a
// plain model of it (a map of names to encodings and a recency list) and
// checks after each that they agree: the entries, their encodings (of
// every size, up to beyond the slab's largest class, in place and moved),
// the least recently used order that trim evicts in, and the accounted
// bytes, which must equal the sum of the entries' sizes.
func TestCacheAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 48))
	c := newCache(0, nil)
	ref := map[string][]byte{}
	var order []string // least recently used first
	touch := func(name string) {
		order = slices.DeleteFunc(order, func(n string) bool { return n == name })
		order = append(order, name)
	}
	randBytes := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	size := func() int {
		switch rng.IntN(20) {
		case 0:
			return 0
		case 1:
			return 60000 + rng.IntN(20000) // around the largest class
		default:
			return rng.IntN(400)
		}
	}
	check := func(step int) {
		t.Helper()
		if c.len() != len(ref) {
			t.Fatalf("step %d: %d cached, want %d", step, c.len(), len(ref))
		}
		var sum int64
		for name, want := range ref {
			id, _ := c.find(name, maphash.String(c.seed, name))
			if id < 0 {
				t.Fatalf("step %d: %q lost", step, name)
			}
			e := c.at(id)
			if !bytes.Equal(c.enc(e), want) || c.name(e) != name {
				t.Fatalf("step %d: %q holds %q %d bytes, want %d", step, name, c.name(e), len(c.enc(e)), len(want))
			}
			sum += entryBytes(c, e)
		}
		if sum != c.bytes || c.budget.used.Load() != c.bytes {
			t.Fatalf("step %d: accounted %d (budget %d), entries take %d", step, c.bytes, c.budget.used.Load(), sum)
		}
		got := c.names()
		slices.Reverse(got)
		if !slices.Equal(got, order) {
			t.Fatalf("step %d: recency %q, want %q", step, got, order)
		}
	}
	for step := range 20000 {
		switch op := rng.IntN(10); {
		case op < 3: // a new object, maybe with a long name
			name := fmt.Sprintf("https://o%d.example.org/%d", rng.IntN(50), step)
			if rng.IntN(50) == 0 {
				name += strings.Repeat("x", 70000)
			}
			e := c.add(name, state.Digest{})
			ref[name] = nil
			touch(name)
			if enc := randBytes(size()); rng.IntN(2) == 0 {
				c.setEnc(e, enc)
				ref[name] = enc
			}
		case op < 7 && len(ref) > 0: // a batch stores a new state
			name := order[rng.IntN(len(order))]
			e, ok := c.entry(name)
			if !ok {
				t.Fatalf("step %d: %q not found", step, name)
			}
			touch(name)
			obj, _ := c.load(e) // random bytes do not decode: a zero Object
			enc := randBytes(size())
			c.store(e, obj, enc)
			ref[name] = enc
		case op < 8: // a miss
			if _, ok := c.entry(fmt.Sprintf("https://absent.example.org/%d", step)); ok {
				t.Fatalf("step %d: found an absent name", step)
			}
		case op < 9: // trim to a random bound
			c.limit = max(len(ref)-rng.IntN(20), 1)
			var evicted []string
			c.trim(func(e *entry) {
				name := c.name(e)
				if !bytes.Equal(c.enc(e), ref[name]) {
					t.Fatalf("step %d: evicted %q with the wrong state", step, name)
				}
				evicted = append(evicted, name)
			})
			c.limit = 0
			n := len(evicted)
			if !slices.Equal(evicted, order[:n]) {
				t.Fatalf("step %d: evicted %q, want the least recently used %q", step, evicted, order[:n])
			}
			for _, name := range evicted {
				delete(ref, name)
			}
			order = order[n:]
		default:
			if rng.IntN(100) == 0 {
				c.clear()
				clear(ref)
				order = nil
			}
		}
		if step%97 == 0 {
			check(step)
		}
	}
	check(-1)
}

// TestCacheCompacts: when states outgrow their slots, the slots left free
// in the class below are given back at the next trim (live slots moved
// down, empty chunks dropped) and every entry still holds its state.
func TestCacheCompacts(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 11))
	c := newCache(0, nil)
	want := map[string][]byte{}
	set := func(name string, n int) {
		e, ok := c.entry(name)
		if !ok {
			e = c.add(name, state.Digest{})
		}
		enc := make([]byte, n)
		for i := range enc {
			enc[i] = byte(rng.Uint32())
		}
		c.setEnc(e, enc)
		want[name] = enc
	}
	const n = 5000
	for i := range n {
		set(fmt.Sprintf("n%05d", i), 50) // 56 bytes: the 64-byte class
	}
	small := &c.mem.classes[slabClassOf(56)]
	if small.carved != n || len(small.chunks) != 5 {
		t.Fatalf("%d slots carved in %d chunks, want %d in 5", small.carved, len(small.chunks), n)
	}
	for i := 1; i < n; i += 2 {
		set(fmt.Sprintf("n%05d", i), 200) // moves to a larger class
	}
	bytesBefore := c.bytes
	c.trim(func(*entry) { t.Fatal("nothing to evict") })
	if small.carved != n/2 || len(small.chunks) != 3 || len(small.free) != 0 {
		t.Errorf("after compaction: %d slots carved in %d chunks, %d free; want %d in 3, none free", small.carved, len(small.chunks), len(small.free), n/2)
	}
	if c.bytes != bytesBefore {
		t.Errorf("compaction changed the accounted bytes: %d, was %d", c.bytes, bytesBefore)
	}
	for name, enc := range want {
		e, ok := c.entry(name)
		if !ok || !bytes.Equal(c.enc(e), enc) || c.name(e) != name {
			t.Fatalf("%s lost its state in the compaction", name)
		}
	}
	// The slots carved after a compaction are the dropped ones, reused.
	set("new", 50)
	if small.carved != n/2+1 {
		t.Errorf("a new slot after compaction: %d carved, want %d", small.carved, n/2+1)
	}
}

// TestEntrySize pins the entry's size that EntryOverheadBytes counts.
func TestEntrySize(t *testing.T) {
	if got := unsafe.Sizeof(entry{}); got != 64 {
		t.Errorf("entry is %d bytes; EntryOverheadBytes counts 64", got)
	}
	if r := makeSlabRef(slabBig, 1<<32-2); r.class() != slabBig || r.index() != 1<<32-2 {
		t.Errorf("slabRef round trip: class %d index %d", r.class(), r.index())
	}
}
