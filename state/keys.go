package state

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"unsafe"
)

// b64 is the alphabet of compact tags: no '{', '}' or glob characters.
const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// compactKeyLen is the length of a compact object key: Redis stores a key
// of at most 14 bytes (1-byte sds header + NUL) in a 16-byte allocation.
const compactKeyLen = 14

// tag returns the hash tag of p's keys, braces included: readable
// "{<prefix><topic>:<id>}"; compact "{" + one character for prefix+topic +
// the ID in base 64 (little-endian digits) + "}".
func (r *Redis) tag(p Partition) string {
	var b strings.Builder
	if r.compact {
		h := sha256.Sum256([]byte(r.cfg.KeyPrefix + p.Topic))
		b.WriteByte('{')
		b.WriteByte(b64[h[0]&63])
		id := uint32(p.ID)
		for {
			b.WriteByte(b64[id&63])
			id >>= 6
			if id == 0 {
				break
			}
		}
		b.WriteByte('}')
		return b.String()
	}
	b.Grow(len(r.cfg.KeyPrefix) + len(p.Topic) + 14)
	b.WriteByte('{')
	b.WriteString(r.cfg.KeyPrefix)
	b.WriteString(p.Topic)
	b.WriteByte(':')
	b.WriteString(strconv.Itoa(int(p.ID)))
	b.WriteByte('}')
	return b.String()
}

// owner is what compact keys record in the meta hash to detect two
// partitions with the same tag; "" for readable keys, whose tags are unique.
func (r *Redis) owner(p Partition) string {
	if !r.compact {
		return ""
	}
	return r.cfg.KeyPrefix + p.Topic + ":" + strconv.Itoa(int(p.ID))
}

// objectKey returns the key of object under tag.
func (r *Redis) objectKey(tag, object string) string {
	if !r.compact {
		return tag + ":o:" + object
	}
	// Hashed in place: Sum256 only reads its argument, so the string's
	// bytes can be viewed as a slice without a copy (a conversion of a
	// string longer than 32 bytes allocates, a stack buffer is zeroed and
	// copied into: this is called for every state read and write).
	h := sha256.Sum256(unsafe.Slice(unsafe.StringData(object), len(object)))
	n := compactKeyLen - len(tag)
	return tag + string(h[:n])
}

// MetaKey returns the key of p's hash of epoch, next offset and (compact
// keys) owner.
func (r *Redis) MetaKey(p Partition) string { return r.tag(p) + ":meta" }

// ObjectKey returns the key of object's value in p.
func (r *Redis) ObjectKey(p Partition, object string) string { return r.objectKey(r.tag(p), object) }

// SnapshotName returns the name under which Snapshot reports object:
// object itself for readable keys, "#" + hex of its key's hash for compact
// keys (which do not store the name).
func (r *Redis) SnapshotName(p Partition, object string) string {
	if !r.compact {
		return object
	}
	tag := r.tag(p)
	return "#" + hex.EncodeToString([]byte(r.objectKey(tag, object)[len(tag):]))
}

// isObjectKey reports whether key is an object key of this store: for
// readable keys, one with this KeyPrefix; for compact keys, any compact key
// (they do not carry the prefix).
func (r *Redis) isObjectKey(key string) bool {
	if len(key) < 2 || key[0] != '{' {
		return false
	}
	end := strings.IndexByte(key, '}')
	if r.compact {
		return len(key) == compactKeyLen && end >= 3 && end <= 5
	}
	return end > 0 && strings.HasPrefix(key[1:], r.cfg.KeyPrefix) && strings.HasPrefix(key[end+1:], ":o:")
}

// escapeGlob escapes Redis glob metacharacters.
func escapeGlob(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
