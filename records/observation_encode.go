package records

import "strconv"

// AppendObservationJSON appends the JSON encoding of o to dst: the bytes
// json.Marshal(o) produces (checked by FuzzObservationRoundTrip), without
// reflection and without allocating when dst has room. As for every record
// of this package, ok is false, and dst is returned unchanged, when o holds
// a value json.Marshal cannot encode (a NaN or infinite PeriodS, a time
// outside years 0–9999); Validate rejects such observations.
func AppendObservationJSON(dst []byte, o *Observation) (_ []byte, ok bool) {
	n := len(dst)
	a := jsonAppender{b: dst, ok: true}
	a.raw(`{"object":`)
	a.str(o.Object)
	if o.Site != "" {
		a.raw(`,"site":`)
		a.str(o.Site)
	}
	a.raw(`,"time":`)
	a.time(o.Time)
	a.raw(`,"kind":`)
	a.str(string(o.Kind))
	if o.Changed != 0 {
		switch o.Changed {
		case Changed:
			a.raw(`,"changed":true`)
		case Unchanged:
			a.raw(`,"changed":false`)
		default:
			a.raw(`,"changed":null`)
		}
	}
	if o.Digest != "" {
		a.raw(`,"digest":`)
		a.str(o.Digest)
	}
	if !o.LastModified.IsZero() {
		a.raw(`,"last_modified":`)
		a.time(o.LastModified)
	}
	if o.Status != 0 {
		a.raw(`,"status":`)
		a.b = strconv.AppendInt(a.b, int64(o.Status), 10)
	}
	if o.PeriodS != 0 {
		a.raw(`,"period_s":`)
		a.float(o.PeriodS)
	}
	if !o.LastEvent.IsZero() {
		a.raw(`,"last_event":`)
		a.time(o.LastEvent)
	}
	if o.Event != "" {
		a.raw(`,"event":`)
		a.str(string(o.Event))
	}
	if o.ChangeFreq != "" {
		a.raw(`,"changefreq":`)
		a.str(o.ChangeFreq)
	}
	if o.Format != "" {
		a.raw(`,"format":`)
		a.str(o.Format)
	}
	if o.Source != "" {
		a.raw(`,"source":`)
		a.str(o.Source)
	}
	if o.Offset != 0 {
		a.raw(`,"offset":`)
		a.b = strconv.AppendInt(a.b, o.Offset, 10)
	}
	a.raw("}")
	if !a.ok {
		return dst[:n], false
	}
	return a.b, true
}
