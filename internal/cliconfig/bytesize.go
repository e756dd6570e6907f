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
		return fmt.Errorf("want a size such as 256MiB, 1GiB, 500MB or 1048576 (%v)", err)
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
