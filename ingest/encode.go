package ingest

import (
	"math"
	"strconv"
	"time"

	"github.com/changerate/changerate/records"
)

// AppendObservation appends the JSON encoding of o to dst and returns the
// extended buffer. The bytes are identical to json.Marshal(o) (checked by
// TestAppendObservationMatchesMarshal and FuzzAppendObservation) but the
// encoder does not allocate when dst has room. Times must be within years
// 0..9999 (every parser guarantees it); a NaN or infinite PeriodS is
// written as 0 (Validate rejects such records before they get here).
func AppendObservation(dst []byte, o *records.Observation) []byte {
	dst = append(dst, `{"object":`...)
	dst = appendString(dst, o.Object)
	if o.Site != "" {
		dst = append(dst, `,"site":`...)
		dst = appendString(dst, o.Site)
	}
	dst = append(dst, `,"time":`...)
	dst = appendTime(dst, o.Time)
	dst = append(dst, `,"kind":`...)
	dst = appendString(dst, string(o.Kind))
	if o.Changed != 0 {
		dst = append(dst, `,"changed":`...)
		switch o.Changed {
		case records.Changed:
			dst = append(dst, "true"...)
		case records.Unchanged:
			dst = append(dst, "false"...)
		default:
			dst = append(dst, "null"...)
		}
	}
	if o.Digest != "" {
		dst = append(dst, `,"digest":`...)
		dst = appendString(dst, o.Digest)
	}
	if !o.LastModified.IsZero() {
		dst = append(dst, `,"last_modified":`...)
		dst = appendTime(dst, o.LastModified)
	}
	if o.Status != 0 {
		dst = append(dst, `,"status":`...)
		dst = strconv.AppendInt(dst, int64(o.Status), 10)
	}
	if o.PeriodS != 0 {
		dst = append(dst, `,"period_s":`...)
		dst = appendFloat(dst, o.PeriodS)
	}
	if !o.LastEvent.IsZero() {
		dst = append(dst, `,"last_event":`...)
		dst = appendTime(dst, o.LastEvent)
	}
	if o.Event != "" {
		dst = append(dst, `,"event":`...)
		dst = appendString(dst, string(o.Event))
	}
	if o.ChangeFreq != "" {
		dst = append(dst, `,"changefreq":`...)
		dst = appendString(dst, o.ChangeFreq)
	}
	if o.Format != "" {
		dst = append(dst, `,"format":`...)
		dst = appendString(dst, o.Format)
	}
	if o.Source != "" {
		dst = append(dst, `,"source":`...)
		dst = appendString(dst, o.Source)
	}
	if o.Offset != 0 {
		dst = append(dst, `,"offset":`...)
		dst = strconv.AppendInt(dst, o.Offset, 10)
	}
	return append(dst, '}')
}

func appendTime(dst []byte, t time.Time) []byte {
	dst = append(dst, '"')
	dst = t.AppendFormat(dst, time.RFC3339Nano)
	return append(dst, '"')
}

// appendFloat follows encoding/json's float64 encoding.
func appendFloat(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, '0')
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	n := len(dst)
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		m := len(dst) - n
		if m >= 4 && dst[len(dst)-4] == 'e' && dst[len(dst)-3] == '-' && dst[len(dst)-2] == '0' {
			dst[len(dst)-2] = dst[len(dst)-1]
			dst = dst[:len(dst)-1]
		}
	}
	return dst
}

// appendString follows encoding/json's string encoding with HTML escaping.
func appendString(dst []byte, s string) []byte { return records.AppendJSONString(dst, s) }
