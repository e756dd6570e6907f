package state_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/changerate/changerate/state"
)

// TestDigests checks that writes carrying their objects' digests and
// reads by digest (DigestGetter) find the same states as by name alone.
func TestDigests(t *testing.T) {
	forEachImpl(t, 0, func(t *testing.T, e env) {
		dg, ok := e.store.(state.DigestGetter)
		if !ok {
			t.Fatalf("%T is not a DigestGetter", e.store)
		}
		if _, err := e.store.Claim(ctx, part, 1); err != nil {
			t.Fatal(err)
		}
		var objects []string
		var digests []state.Digest
		var w []state.Write
		for i := range 40 {
			o := fmt.Sprintf("https://news%d.example.org/section-%d/2026/11/article-%07d.html", i%3, i%5, i)
			objects, digests = append(objects, o), append(digests, state.DigestOf(o))
			wr := state.Write{Object: o, Value: fmt.Appendf(nil, "v%d", i)}
			if i%2 == 0 {
				wr.Digest = digests[i]
			}
			w = append(w, wr)
		}
		if err := e.store.Commit(ctx, part, 1, -1, 10, w); err != nil {
			t.Fatal(err)
		}
		objects = append(objects, "missing")
		digests = append(digests, state.Digest{}) // none: the store hashes the name
		byName := get(t, e.store, part, objects...)
		byDigest, err := dg.GetDigests(ctx, part, objects, digests, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range objects {
			var want []byte
			if i < len(w) {
				want = w[i].Value
			}
			if !bytes.Equal(byName[i], want) || !bytes.Equal(byDigest[i], want) || (byDigest[i] == nil) != (want == nil) {
				t.Fatalf("%s: Get %q, GetDigests %q; want %q", objects[i], byName[i], byDigest[i], want)
			}
		}
		if _, err := dg.GetDigests(ctx, part, objects, digests[1:], nil); err == nil {
			t.Fatal("GetDigests with fewer digests than objects: no error")
		}
	})
}
