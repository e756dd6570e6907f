package state

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// TestCompactObjectKeyStable pins compact object keys (the pinned values
// computed outside Go: python3 hashlib.sha256): the tag followed by
// the first bytes of the SHA-256 of the object name. A deployment's state
// is found by these keys, so a change of the hashing (or of how the name's
// bytes reach it) would lose every object's state on upgrade.
func TestCompactObjectKeyStable(t *testing.T) {
	r := &Redis{compact: true}
	long := "https://example.org/" + strings.Repeat("a/", 400) // longer than any stack buffer
	for _, tc := range []struct {
		tag, object, want string
	}{
		{"{AB}", "https://example.org/page", "7b41427d2476c9debd382dc9f24a"},
		{"{A}", "", "7b417de3b0c44298fc1c149afbf4"},
		{"{ABC}", long, ""},
	} {
		got := r.objectKey(tc.tag, tc.object)
		if len(got) != compactKeyLen {
			t.Errorf("objectKey(%q, %.30q) has %d bytes, want %d", tc.tag, tc.object, len(got), compactKeyLen)
		}
		sum := sha256.Sum256([]byte(tc.object))
		if want := tc.tag + string(sum[:compactKeyLen-len(tc.tag)]); got != want {
			t.Errorf("objectKey(%q, %.30q) = %x, want %x (tag + SHA-256 prefix)", tc.tag, tc.object, got, want)
		}
		if tc.want != "" && hex.EncodeToString([]byte(got)) != tc.want {
			t.Errorf("objectKey(%q, %q) = %x, want the pinned %s", tc.tag, tc.object, got, tc.want)
		}
	}
}

// BenchmarkObjectKey: the compact key of an object name of typical length,
// computed for every state read and write.
func BenchmarkObjectKey(b *testing.B) {
	r := &Redis{compact: true}
	name := "https://www.example.org/some/section/article-" + strings.Repeat("x", 40) + ".html"
	b.ReportAllocs()
	for b.Loop() {
		_ = r.objectKey("{AB}", name)
	}
}
