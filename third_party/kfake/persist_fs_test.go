package kfake

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"testing"
)

// TestMemFSChunks checks the chunked memFS file (changerate patch 2)
// against a plain byte slice under random appends, positioned writes past
// the end, truncations both ways, seeks and reads, across chunk boundaries.
func TestMemFSChunks(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		fs := newMemFS()
		f, err := fs.OpenFile("/kfake/t-0/0.log", os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		var model []byte
		pos := int64(0)
		for op := 0; op < 150; op++ {
			switch k := rng.IntN(10); {
			case k < 5: // write at pos
				b := make([]byte, rng.IntN(3*memChunk/2))
				for i := range b {
					b[i] = byte(rng.Uint32())
				}
				if _, err := f.Write(b); err != nil {
					t.Fatal(err)
				}
				if end := pos + int64(len(b)); end > int64(len(model)) {
					model = append(model, make([]byte, end-int64(len(model)))...)
				}
				copy(model[pos:], b)
				pos += int64(len(b))
			case k < 7: // truncate
				size := rng.Int64N(int64(len(model)) + memChunk)
				if err := f.(*memFile).Truncate(size); err != nil {
					t.Fatal(err)
				}
				if size < int64(len(model)) {
					model = model[:size]
				} else {
					model = append(model, make([]byte, size-int64(len(model)))...)
				}
			case k < 9: // seek, possibly past the end (a later write leaves a hole of zeros)
				pos = rng.Int64N(int64(len(model)) + memChunk/4)
				if _, err := f.Seek(pos, io.SeekStart); err != nil {
					t.Fatal(err)
				}
			default: // read at pos
				b := make([]byte, rng.IntN(2*memChunk))
				n, err := f.Read(b)
				want := 0
				if pos < int64(len(model)) {
					want = copy(make([]byte, len(b)), model[pos:])
				}
				if n != want || (pos >= int64(len(model)) && err != io.EOF) {
					t.Fatalf("seed %d op %d: read %d bytes at %d (err %v), want %d", seed, op, n, pos, err, want)
				}
				if n > 0 && !bytes.Equal(b[:n], model[pos:pos+int64(n)]) {
					t.Fatalf("seed %d op %d: read at %d differs", seed, op, pos)
				}
				pos += int64(n)
			}
			if fi, err := fs.Stat("/kfake/t-0/0.log"); err != nil || fi.Size() != int64(len(model)) {
				t.Fatalf("seed %d op %d: size %d (err %v), want %d", seed, op, fi.Size(), err, len(model))
			}
		}
		got, err := fs.ReadFile("/kfake/t-0/0.log")
		if err != nil || !bytes.Equal(got, model) {
			t.Fatalf("seed %d: ReadFile differs from the model (%d vs %d bytes, err %v)", seed, len(got), len(model), err)
		}
		// O_TRUNC empties the file; O_APPEND writes at the end.
		a, _ := fs.OpenFile("/kfake/t-0/0.log", os.O_TRUNC|os.O_APPEND|os.O_WRONLY, 0o644)
		if _, err := a.Write([]byte("abc")); err != nil {
			t.Fatal(err)
		}
		if got, _ := fs.ReadFile("/kfake/t-0/0.log"); string(got) != "abc" {
			t.Fatalf("seed %d: after O_TRUNC and an append the file is %q", seed, got)
		}
	}
}

// BenchmarkMemFSAppend is the segment write of the broker: appends of one
// produce batch each to a file that grows to 64 MiB.
func BenchmarkMemFSAppend(b *testing.B) {
	batch := make([]byte, 16<<10)
	b.SetBytes(int64(len(batch)))
	fs := newMemFS()
	var f file
	for i := 0; i < b.N; i++ {
		if i%4096 == 0 {
			fs.files["/kfake/t-0/seg.log"] = &memFileData{} // a new segment
			f, _ = fs.OpenFile("/kfake/t-0/seg.log", os.O_APPEND|os.O_WRONLY, 0o644)
		}
		if _, err := f.Write(batch); err != nil {
			b.Fatal(err)
		}
	}
}
