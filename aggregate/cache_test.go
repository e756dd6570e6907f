package aggregate

import (
	"fmt"
	"runtime"
	"testing"
)

// TestCacheBudget checks the byte accounting and the shared budget: the
// caches of one budget keep at most their share after trim, evicted
// entries hand over their encoding, and closing a cache returns its bytes.
func TestCacheBudget(t *testing.T) {
	const per = EntryOverheadBytes + 20 + 100 // name of 20 bytes, 100-byte states
	budget := &cacheBudget{limit: 100 * per}
	a, b := newCache(0, budget), newCache(0, budget)
	fill := func(c *cache, prefix string, n int) {
		for i := 0; i < n; i++ {
			e := c.add(fmt.Sprintf("%s%019d", prefix, i))
			if _, err := c.load(e); err != nil {
				t.Fatal(err)
			}
			c.store(e, make([]byte, 100))
		}
	}
	fill(a, "a", 80)
	if a.bytes != 80*per || budget.used.Load() != 80*per {
		t.Fatalf("accounted %d (budget %d), want %d", a.bytes, budget.used.Load(), 80*per)
	}
	var evicted int
	a.trim(func(e *entry) {
		if len(e.enc) != 100 {
			t.Errorf("evicted %s with %d bytes of state", e.name, len(e.enc))
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
		e := c.add(fmt.Sprint(i))
		c.load(e)
		c.store(e, states[i].AppendBinary(nil))
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
		c.release(e)
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
			e := c.add(name)
			c.load(e)
			c.store(e, encs[i%len(encs)])
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
	// The names are held by the caller here (in the processor they are
	// the decoded observations' strings, kept by the cache alone).
	b.ReportMetric(heap, "heap-B/object")
	b.ReportMetric(acct, "accounted-B/object")
}
