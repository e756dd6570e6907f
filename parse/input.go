package parse

// StartInput tells p that a new input begins. A parser that keeps what an
// input's header line said (cdx: the column letters of " CDX N b a ...")
// forgets it, so that the header of one file does not apply to the next.
// Other parsers are stateless between lines; for them it does nothing.
func StartInput(p Parser) {
	z, ok := p.(zeroing)
	if !ok {
		return
	}
	if r, ok := z.lineParser.(interface{ resetInput() }); ok {
		r.resetInput()
	}
}

// PerObjectOrdered reports whether an input of format lists each object's
// observations in time order, whatever the order across objects: a
// capture index (cdx, cdxj) is sorted by URL key, then capture time.
func PerObjectOrdered(format string) bool { return format == "cdx" || format == "cdxj" }
