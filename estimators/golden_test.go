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

// TestEncodingGolden pins the version-1 encoding: states stored in Redis by
// one build must decode in the next. Regenerate with -update only together
// with a new encodingVersion.
func TestEncodingGolden(t *testing.T) {
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
	got := "change " + hex.EncodeToString(c.AppendBinary(nil)) + "\naccess " + hex.EncodeToString(a.AppendBinary(nil)) + "\n"
	path := filepath.Join("testdata", "encoding_v1.golden")
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
			_, err = d.DecodeBinary(b)
			if d != c {
				t.Error("golden change decodes differently")
			}
		case "access":
			var d Access
			_, err = d.DecodeBinary(b)
			if d != a {
				t.Error("golden access decodes differently")
			}
		}
		if err != nil {
			t.Error(err)
		}
	}
}
