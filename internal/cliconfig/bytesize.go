package cliconfig

import (
	"fmt"
	"math"
	"strings"

	"github.com/dustin/go-humanize"
)

// ByteSize is an option in bytes written with an optional unit (256MiB,
// 1GiB, 500MB, 32KiB, 1048576), parsed by go-humanize. Every option of the
// programs that is a number of bytes has this type, so that they all read
// the same way.
type ByteSize int64

// Decode implements Decoder.
func (b *ByteSize) Decode(s string) error {
	if strings.HasPrefix(strings.TrimSpace(s), "-") {
		return fmt.Errorf("a size cannot be negative (0 means the option's default or no bound, as it documents)")
	}
	n, err := humanize.ParseBytes(s)
	if err != nil {
		// go-humanize's error names its internals (strconv.ParseFloat:
		// parsing ""): say what is wrong in the user's words.
		return fmt.Errorf("%s; want a number of bytes with an optional unit, such as 256MiB, 1GiB, 500MB or 1048576", sizeProblem(s))
	}
	if n > math.MaxInt64 {
		return fmt.Errorf("%s is too large", s)
	}
	*b = ByteSize(n)
	return nil
}

// String writes b with the largest binary unit that divides it (256MiB),
// as Decode reads it.
func (b ByteSize) String() string {
	for _, u := range []struct {
		name string
		size ByteSize
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b != 0 && b%u.size == 0 {
			return fmt.Sprintf("%d%s", b/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d", int64(b))
}

// sizeProblem says why s is not a size: empty, no leading number, or a
// unit that is not one.
func sizeProblem(s string) string {
	t := strings.TrimSpace(s)
	if t == "" {
		return "the size is empty"
	}
	i := strings.IndexFunc(t, func(r rune) bool { return !(r >= '0' && r <= '9' || r == '.' || r == ',') })
	switch {
	case i == 0:
		return fmt.Sprintf("%q does not start with a number", s)
	case i > 0:
		return fmt.Sprintf("%q has an unknown unit %q (B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)", s, strings.TrimSpace(t[i:]))
	}
	return fmt.Sprintf("%q is not a number", s)
}
