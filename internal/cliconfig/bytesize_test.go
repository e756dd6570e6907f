package cliconfig

import (
	"strings"
	"testing"
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
		var b ByteSize
		err := b.Decode(tc.in)
		if (err == nil) != tc.ok || (tc.ok && int64(b) != tc.want) {
			t.Errorf("Decode(%q) = %d, %v; want %d (ok %v)", tc.in, b, err, tc.want, tc.ok)
		}
	}
	// A size that is not one says why in the user's words, not the
	// parser's (it said "strconv.ParseFloat: parsing \"\"" for all of
	// them: issue 32 item 11).
	for in, want := range map[string]string{
		"":      "the size is empty",
		"lots":  `"lots" does not start with a number`,
		"MiB":   `"MiB" does not start with a number`,
		"12xyz": `"12xyz" has an unknown unit "xyz"`,
		"1..2":  `"1..2" is not a number`,
	} {
		var b ByteSize
		err := b.Decode(in)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "strconv") {
			t.Errorf("Decode(%q): %v, want %q", in, err, want)
		}
	}
	// A negative size is named as such, not as a parser's internals.
	var b ByteSize
	if err := b.Decode("-1"); err == nil || !strings.Contains(err.Error(), "cannot be negative") || strings.Contains(err.Error(), "ParseFloat") {
		t.Errorf("Decode(-1): %v, want an error saying a size cannot be negative", err)
	}
}

// TestByteSizeString: String writes what Decode reads back.
func TestByteSizeString(t *testing.T) {
	for _, b := range []ByteSize{0, 1, 1000, 1 << 10, 32 << 10, 1 << 20, 3 << 30, 1<<30 + 1} {
		var got ByteSize
		if err := got.Decode(b.String()); err != nil || got != b {
			t.Errorf("Decode(%q) = %d, %v; want %d", b.String(), got, err, b)
		}
	}
	if s := ByteSize(32 << 10).String(); s != "32KiB" {
		t.Errorf("String() = %q, want 32KiB", s)
	}
}
