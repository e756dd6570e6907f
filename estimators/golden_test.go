package estimators

import (
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// goldenStates are the states pinned in testdata/encoding_v*.golden.
func goldenStates() (Change, Access) {
	var c Change
	c.Visit(Visit{Time: 1.7e9, LastModified: 1.7e9 - 3600, HasLastModified: true})
	c.Visit(Visit{Time: 1.7e9 + 86400, Changed: true, LastModified: 1.7e9 + 80000, HasLastModified: true})
	c.Visit(Visit{Time: 1.7e9 + 2*86400, LastModified: 1.7e9 + 80000, HasLastModified: true})
	c.Visit(Visit{Time: 1.7e9 + 3*86400 + 7, Changed: true})
	c.Snapshot(Snapshot{Time: 1.7e9, Period: 3600, LastEvent: 1.7e9 - 10, HasEvent: true})
	var a Access
	a.Access(1.7e9)
	a.Access(1.7e9 + 12.5)
	a.Snapshot(Snapshot{Time: 1.7e9 + 600, Period: 600, LastEvent: 1.7e9 + 12.5, HasEvent: true})
	return c, a
}

// goldenRef is the reference time of the golden encodings: the latest
// observation, as aggregate passes it.
const goldenRef = 1.7e9 + 3*86400 + 7

// TestEncodingGolden pins the current encoding (Change version 3, Access
// version 2): states stored in Redis by one build must decode in the next.
// Regenerate with -update only together with a new version, keeping the
// old file for TestEncodingGoldenV1/V2-style decoding tests.
func TestEncodingGolden(t *testing.T) {
	c, a := goldenStates()
	const ref = goldenRef
	got := "change " + hex.EncodeToString(c.AppendBinaryAt(nil, ref)) + "\naccess " + hex.EncodeToString(a.AppendBinaryAt(nil, ref)) + "\n"
	path := filepath.Join("testdata", "encoding_v4.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("encoding changed:\ngot  %s\nwant %s", got, want)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(want)), "\n") {
		kind, hx, _ := strings.Cut(line, " ")
		b, _ := hex.DecodeString(hx)
		var err error
		switch kind {
		case "change":
			var d Change
			_, err = d.DecodeBinaryAt(b, ref)
			if d != c {
				t.Error("golden change decodes differently")
			}
		case "access":
			var d Access
			_, err = d.DecodeBinaryAt(b, ref)
			if d != a {
				t.Error("golden access decodes differently")
			}
		}
		if err != nil {
			t.Error(err)
		}
	}
}

// TestEncodingGoldenV1 decodes the states a version-1 build stored: the
// times and sums, whole milliseconds in these inputs, come back exactly; Σ I²
// becomes the float32 of the float64 sum.
func TestEncodingGoldenV1(t *testing.T) {
	c, a := goldenStates()
	for _, g := range goldenFile(t, "encoding_v1.golden") {
		b := g.b
		switch g.kind {
		case "change":
			var d Change
			n, err := d.DecodeBinary(b)
			if err != nil || n != len(b) {
				t.Fatalf("v1 change: n %d of %d, %v", n, len(b), err)
			}
			want := c
			want.sumSq = float32(2*86400.0*86400.0 + 86407.0*86407.0)
			// No dependence count before version 3: it starts at its
			// expectation for 2 of 3 independent flags, round(4·2/9) = 1.
			// No latest flag before version 3: run = the expectation
			// (n−X)/(X+1) = 1/3, at least 1; then Q = (n+1)²/K + E₀[V]
			// = 16/3 + 2/3 = 6 gives Q_c = 6 − (1+1)² = 2, the only
			// value of two spacings summing to n − run = 2.
			want.run, want.sq = 1, 2
			if d != want {
				t.Errorf("v1 change decodes to\n%+v, want\n%+v", d, want)
			}
			if d.unchangedTime() != 86400 || d.Span() != 3*86400+7 {
				t.Errorf("v1 change: U %v, span %v", d.unchangedTime(), d.Span())
			}
		case "access":
			var d Access
			n, err := d.DecodeBinary(b)
			if err != nil || n != len(b) || d != a {
				t.Errorf("v1 access: n %d of %d, %v: %+v want %+v", n, len(b), err, d, a)
			}
		default:
			t.Fatalf("unknown kind %q", g.kind)
		}
	}
}

// TestEncodingGoldenV2 decodes the states a version-2 build stored (before
// the flag-dependence count): every field exactly, the count starting at
// its expectation for independent flags (2 of 3 set: round(4·2/9) = 1),
// the latest flag taken as unchanged; Access is still version 2 and
// decodes to the same state.
func TestEncodingGoldenV2(t *testing.T) {
	c, a := goldenStates()
	for _, g := range goldenFile(t, "encoding_v2.golden") {
		b := g.b
		switch g.kind {
		case "change":
			if b[0]>>4 != 2 {
				t.Fatalf("v2 golden has version %d", b[0]>>4)
			}
			var d Change
			n, err := d.DecodeBinaryAt(b, goldenRef)
			if err != nil || n != len(b) {
				t.Fatalf("v2 change: n %d of %d, %v", n, len(b), err)
			}
			want := c
			want.run, want.sq = 1, 2 // as for version 1
			if d != want {
				t.Errorf("v2 change decodes to\n%+v, want\n%+v", d, want)
			}
			// Re-encoded as version 4 it round-trips at its old size, as
			// a new state does: the state budget (aggregate
			// TestEncodedSize*) holds for migrated states too.
			var e Change
			b3 := d.AppendBinaryAt(nil, goldenRef)
			if _, err := e.DecodeBinaryAt(b3, goldenRef); err != nil || e != d {
				t.Errorf("v2 → v4 round trip: %v %+v", err, e)
			}
			// run = 1 and zigzag(Q_c − E) = 0 (E = 2, k = 0): 3 + 1 + 1
			// bits, within the bucket bits' padding.
			if len(b3) != len(b) {
				t.Errorf("v2 state of %d bytes re-encodes to %d, want %d", len(b), len(b3), len(b))
			}
		case "access":
			var d Access
			n, err := d.DecodeBinaryAt(b, goldenRef)
			if err != nil || n != len(b) || d != a {
				t.Errorf("v2 access: n %d of %d, %v: %+v want %+v", n, len(b), err, d, a)
			}
		default:
			t.Fatalf("unknown kind %q", g.kind)
		}
	}
}

// TestEncodingGoldenV3: a version-3 state (the lag-1 pair count) decodes
// with the spacing statistics imported (importSpacings): its latest
// interval changed (run = 0), its pair count C = 0 gives ρ̂ = (0 − 4/9)/
// (2/9) + 1/3 < 0 (D3), so D = 1, and Q = (n+1)²/K + E₀[V] = 16/3 + 2/3
// = 6, Q_c = 6 − 1 = 5: the true spacings 1 and 2 (the golden visits:
// changed, unchanged, changed).
func TestEncodingGoldenV3(t *testing.T) {
	c, a := goldenStates()
	if c.run != 0 || c.sq != 5 {
		t.Fatalf("golden state: run %d, Q_c %d; want 0, 5", c.run, c.sq)
	}
	for _, g := range goldenFile(t, "encoding_v3.golden") {
		switch g.kind {
		case "change":
			if g.b[0]>>4 != 3 {
				t.Fatalf("v3 golden has version %d", g.b[0]>>4)
			}
			var d Change
			if n, err := d.DecodeBinaryAt(g.b, goldenRef); err != nil || n != len(g.b) || d != c {
				t.Errorf("v3 change: n %d of %d, %v:\n%+v, want\n%+v", n, len(g.b), err, d, c)
			}
		case "access":
			var d Access
			if n, err := d.DecodeBinaryAt(g.b, goldenRef); err != nil || n != len(g.b) || d != a {
				t.Errorf("v3 access: n %d of %d, %v", n, len(g.b), err)
			}
		}
	}
}

// goldenLine is one "kind hex" line of a golden encoding file.
type goldenLine struct {
	kind string
	b    []byte
}

// goldenFile reads testdata/name.
func goldenFile(t *testing.T, name string) []goldenLine {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var out []goldenLine
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		kind, hx, _ := strings.Cut(line, " ")
		b, err := hex.DecodeString(hx)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, goldenLine{kind, b})
	}
	return out
}
