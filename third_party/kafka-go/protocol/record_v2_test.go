package protocol

// changerate patch (../PATCH.md): the patched readFromVersion2 (records
// decoded by a recordCursor) against upstream's (record_v2_upstream_test.go)
// on well-formed batches whose records span many pages, and on arbitrary
// records sections (the fuzz target): both must return the same records,
// and fail or succeed together.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand"
	"reflect"
	"testing"
	"time"
)

// v2Batch frames a records section as a v2 record batch (baseOffset,
// length, leader epoch, magic, CRC-32C over the rest) holding numRecords
// records, uncompressed.
func v2Batch(baseOffset int64, firstTimestamp int64, numRecords int32, records []byte) []byte {
	var b []byte
	b = binary.BigEndian.AppendUint64(b, uint64(baseOffset))
	b = binary.BigEndian.AppendUint32(b, 0) // batch length, below
	b = binary.BigEndian.AppendUint32(b, 0) // partition leader epoch
	b = append(b, 2)                        // magic
	b = binary.BigEndian.AppendUint32(b, 0) // CRC, below
	crcStart := len(b)
	b = binary.BigEndian.AppendUint16(b, 0)                      // attributes
	b = binary.BigEndian.AppendUint32(b, uint32(numRecords-1))   // last offset delta
	b = binary.BigEndian.AppendUint64(b, uint64(firstTimestamp)) // first timestamp
	b = binary.BigEndian.AppendUint64(b, uint64(firstTimestamp)) // max timestamp
	b = binary.BigEndian.AppendUint64(b, ^uint64(0))             // producer ID
	b = binary.BigEndian.AppendUint16(b, ^uint16(0))             // producer epoch
	b = binary.BigEndian.AppendUint32(b, ^uint32(0))             // base sequence
	b = binary.BigEndian.AppendUint32(b, uint32(numRecords))
	b = append(b, records...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[crcStart:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

type testRecord struct {
	tsDelta, offDelta int64
	key, value        []byte // nil: null
	headers           []Header
}

// appendRecord encodes r as a v2 record.
func appendRecord(b []byte, r testRecord) []byte {
	var body []byte
	body = append(body, 0) // attributes
	body = binary.AppendVarint(body, r.tsDelta)
	body = binary.AppendVarint(body, r.offDelta)
	for _, f := range [][]byte{r.key, r.value} {
		if f == nil {
			body = binary.AppendVarint(body, -1)
		} else {
			body = binary.AppendVarint(body, int64(len(f)))
			body = append(body, f...)
		}
	}
	body = binary.AppendVarint(body, int64(len(r.headers)))
	for _, h := range r.headers {
		body = binary.AppendVarint(body, int64(len(h.Key)))
		body = append(body, h.Key...)
		body = binary.AppendVarint(body, int64(len(h.Value)))
		body = append(body, h.Value...)
	}
	b = binary.AppendVarint(b, int64(len(body)))
	return append(b, body...)
}

// decodedRecord is what a consumer sees of a record.
type decodedRecord struct {
	Offset     int64
	Time       time.Time
	Key, Value []byte
	KeyNil     bool
	ValueNil   bool
	Headers    []Header
}

// decodeWith decodes batch with readFromVersion2 (upstream: the reference)
// and returns the records or the error; a panic is returned as an error
// with panicked set.
func decodeWith(batch []byte, upstream bool) (recs []decodedRecord, err error, panicked bool) {
	defer func() {
		if p := recover(); p != nil {
			recs, err, panicked = nil, fmt.Errorf("panic: %v", p), true
		}
	}()
	d := &decoder{reader: bytes.NewReader(batch), remain: len(batch)}
	var rs RecordSet
	if upstream {
		err = rs.readFromVersion2Upstream(d)
	} else {
		err = rs.readFromVersion2(d)
	}
	if err != nil || rs.Records == nil {
		return nil, err, false
	}
	for {
		r, err := rs.Records.ReadRecord()
		if errors.Is(err, io.EOF) {
			return recs, nil, false
		}
		if err != nil {
			return nil, err, false
		}
		dr := decodedRecord{Offset: r.Offset, Time: r.Time, Headers: r.Headers, KeyNil: r.Key == nil, ValueNil: r.Value == nil}
		if r.Key != nil {
			dr.Key, _ = ReadAll(r.Key)
			r.Key.Close()
		}
		if r.Value != nil {
			dr.Value, _ = ReadAll(r.Value)
			r.Value.Close()
		}
		recs = append(recs, dr)
	}
}

func TestRecordCursorMatchesUpstream(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	randBytes := func(max int) []byte {
		switch rng.Intn(8) {
		case 0:
			return nil
		case 1:
			return []byte{}
		}
		b := make([]byte, rng.Intn(max))
		rng.Read(b)
		return b
	}
	for _, tc := range []struct {
		name     string
		n        int
		maxField int // bytes
		headers  bool
	}{
		{"one small record", 1, 16, false},
		{"small records in one page", 200, 100, false},
		{"records across many pages", 3000, 2000, false},
		{"fields larger than a page", 20, 3 * pageSize, false},
		{"headers", 500, 300, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sec []byte
			var want []testRecord
			for i := 0; i < tc.n; i++ {
				r := testRecord{tsDelta: int64(rng.Intn(1 << 30)), offDelta: int64(i), key: randBytes(tc.maxField), value: randBytes(tc.maxField)}
				if tc.headers && rng.Intn(2) == 0 {
					for j := rng.Intn(4); j >= 0; j-- {
						r.headers = append(r.headers, Header{Key: string(randBytes(20)), Value: randBytes(50)})
					}
				}
				want = append(want, r)
				sec = appendRecord(sec, r)
			}
			batch := v2Batch(1_000_000, 1_700_000_000_000, int32(tc.n), sec)
			got, err, _ := decodeWith(batch, false)
			if err != nil {
				t.Fatal(err)
			}
			ref, refErr, _ := decodeWith(batch, true)
			if refErr != nil {
				t.Fatal(refErr)
			}
			if !reflect.DeepEqual(got, ref) {
				t.Fatalf("patched and upstream decoders differ on %d records", tc.n)
			}
			if len(got) != tc.n {
				t.Fatalf("%d records decoded, want %d", len(got), tc.n)
			}
			for i, r := range want {
				g := got[i]
				if g.Offset != 1_000_000+r.offDelta || g.Time.UnixMilli() != 1_700_000_000_000+r.tsDelta ||
					!bytes.Equal(g.Key, r.key) || g.KeyNil != (r.key == nil) ||
					!bytes.Equal(g.Value, r.value) || g.ValueNil != (r.value == nil) || len(g.Headers) != len(r.headers) {
					t.Fatalf("record %d: got %+v, want %+v", i, g, r)
				}
			}
			// Every truncation of the records section: the same records
			// (a prefix), the same failure.
			for _, cut := range []int{0, 1, len(sec) / 3, len(sec) / 2, len(sec) - 1} {
				b := v2Batch(5, 7, int32(tc.n), sec[:cut])
				compareDecoders(t, b)
			}
		})
	}
}

// compareDecoders fails t unless the patched decoder returns upstream's
// records and fails exactly when upstream does (where upstream panics, on
// a corrupt header count it allocates, the patched one must not).
func compareDecoders(t testing.TB, batch []byte) {
	t.Helper()
	got, err, panicked := decodeWith(batch, false)
	if panicked {
		t.Fatalf("patched decoder: %v", err)
	}
	ref, refErr, refPanicked := decodeWith(batch, true)
	if refPanicked {
		return
	}
	if (err == nil) != (refErr == nil) {
		t.Fatalf("patched decoder error %v, upstream %v", err, refErr)
	}
	if !reflect.DeepEqual(got, ref) {
		t.Fatalf("patched decoder returned %d records, upstream %d, or they differ:\n%+v\n%+v", len(got), len(ref), got, ref)
	}
}

func FuzzRecordCursor(f *testing.F) {
	var sec []byte
	sec = appendRecord(sec, testRecord{tsDelta: 3, offDelta: 0, key: []byte("k"), value: []byte("value")})
	sec = appendRecord(sec, testRecord{tsDelta: 9, offDelta: 1, value: []byte{}, headers: []Header{{Key: "a", Value: []byte("b")}}})
	f.Add(sec, uint8(2))
	f.Add(sec[:7], uint8(2))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, uint8(1))
	f.Fuzz(func(t *testing.T, records []byte, n uint8) {
		batch := v2Batch(0, 0, int32(n%64), records)
		if upstreamExhaustsMemory(records, int(n%64)) {
			if _, err, panicked := decodeWith(batch, false); panicked {
				t.Fatalf("patched decoder: %v", err)
			}
			return
		}
		compareDecoders(t, batch)
	})
}

// upstreamExhaustsMemory reports whether upstream's decoder would allocate
// a header count or a header field length of the records section that
// exceeds the bytes left (a fatal out-of-memory error for a large one,
// which no recover catches): it walks the records as both decoders do.
func upstreamExhaustsMemory(records []byte, n int) bool {
	p := &page{buffer: new([pageSize]byte)}
	if len(records) > pageSize {
		return true // not generated by the fuzz target's corpus sizes
	}
	p.length = copy(p.buffer[:], records)
	c := newRecordCursor(contiguousPages{p}, len(records))
	for i := 0; i < n && c.err == nil; i++ {
		c.readVarInt()
		c.readInt8()
		c.readVarInt()
		c.readVarInt()
		if k := c.readVarInt(); k > 0 {
			c.discard(k)
		}
		if v := c.readVarInt(); v > 0 {
			c.discard(v)
		}
		h := c.readVarInt()
		if h > 0 && c.err == nil && h > (c.end-c.pos)/2 {
			return true
		}
		for j := int64(0); j < h && c.err == nil; j++ {
			for range 2 {
				if l := c.readVarInt(); l > c.end-c.pos {
					return true
				} else if l > 0 {
					c.discard(l)
				}
			}
		}
	}
	return false
}
