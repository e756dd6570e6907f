package main

import (
	"testing"

	"github.com/changerate/changerate/aggregate"
)

func TestByteSizeDecode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"256MiB", 256 << 20, true},
		{"1GiB", 1 << 30, true},
		{"500MB", 500e6, true},
		{"1048576", 1 << 20, true},
		{"0", 0, true},
		{"12xyz", 0, false},
		{"-5MiB", 0, false},
		{"", 0, false},
	} {
		var b byteSize
		err := b.Decode(tc.in)
		if (err == nil) != tc.ok || (tc.ok && int64(b) != tc.want) {
			t.Errorf("Decode(%q) = %d, %v; want %d (ok %v)", tc.in, b, err, tc.want, tc.ok)
		}
	}
}

func TestCacheBytesConfig(t *testing.T) {
	c := config{CacheBytes: 512 << 20, CacheObjects: 10, Emit: aggregate.EmitUpdate, BatchSize: 100}
	if pc := c.processorConfig(); pc.CacheBytes != 512<<20 || pc.CacheObjects != 10 {
		t.Errorf("update mode: CacheBytes %d, CacheObjects %d", pc.CacheBytes, pc.CacheObjects)
	}
	c.Emit = aggregate.EmitFinal
	if pc := c.processorConfig(); pc.CacheBytes != aggregate.Unbounded || pc.CacheObjects != aggregate.Unbounded {
		t.Errorf("final mode: CacheBytes %d, CacheObjects %d, want both Unbounded", pc.CacheBytes, pc.CacheObjects)
	}
}
