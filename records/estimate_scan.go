package records

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// EstimateHead holds the fields of an encoded Estimate that a reader of
// the estimates topic needs to rank and plan (the query API's index): all
// but the estimators' maps and the window, which are most of a record.
type EstimateHead struct {
	Object    string      `json:"object"`
	Site      string      `json:"site"`
	Kind      string      `json:"kind"`
	AsOf      time.Time   `json:"as_of"`
	RatePerS  *float64    `json:"rate_per_s"`
	CI95      *[2]float64 `json:"ci95"`
	NextVisit *time.Time  `json:"next_visit"`
	Changes   int64       `json:"changes"`
	// Shown by the query API's /v1/top and / (query.Index.TopRecords).
	Estimator    string   `json:"estimator"`
	Observations int64    `json:"observations"`
	TTLS         *float64 `json:"ttl_s"`
	// What /v1/plan plans on (Estimate.PlanEvidence).
	PlanEvidence *[2]float64 `json:"plan_evidence"`
	PlanPrior    *[2]float64 `json:"plan_prior"`
	PlanOmega    *float64    `json:"plan_omega"`
}

// DecodeEstimateHead reads the head of an encoded estimate record: by
// scanning it without decoding the rest when it is in the form
// AppendEstimateJSON writes, else with encoding/json (whose result the scan
// equals wherever both apply: FuzzScanEstimate).
func DecodeEstimateHead(b []byte) (EstimateHead, error) {
	var h EstimateHead
	if scanEstimate(b, &h) {
		return h, nil
	}
	h = EstimateHead{}
	if err := json.Unmarshal(b, &h); err != nil {
		return EstimateHead{}, fmt.Errorf("records: estimate: %w", err)
	}
	return h, nil
}

// scanEstimate fills ie from the top-level fields of an encoded estimate
// record that EstimateHead holds, skipping the others without decoding
// them. It reads the records as the aggregator writes them
// (AppendEstimateJSON); ok is false for anything else it is not sure to
// read as encoding/json would (escaped strings, keys in another case,
// malformed values), and DecodeEstimateHead then decodes with
// encoding/json. Where ok is true and encoding/json accepts the input, the
// result equals json.Unmarshal's (FuzzScanEstimate).
func scanEstimate(b []byte, ie *EstimateHead) (ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		key, j, ok := scanPlainString(b, i)
		if !ok {
			return false
		}
		i = skipSpace(b, j)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		switch key {
		case "object", "site", "kind", "estimator":
			if i < len(b) && b[i] == 'n' {
				return false // null: leaves the field as it was; not written by the aggregator
			}
			s, j, ok := scanPlainString(b, i)
			if !ok {
				return false
			}
			switch key {
			case "object":
				ie.Object = s
			case "site":
				ie.Site = s
			case "estimator":
				ie.Estimator = s
			default:
				ie.Kind = s
			}
			i = j
		case "as_of", "next_visit":
			j, ok := skipValue(b, i)
			if !ok {
				return false
			}
			var t time.Time
			if string(b[i:j]) == "null" {
				if key == "next_visit" {
					ie.NextVisit = nil
				}
			} else {
				if b[i] != '"' || bytes.IndexByte(b[i:j], '\\') >= 0 || t.UnmarshalJSON(b[i:j]) != nil {
					return false
				}
				if key == "as_of" {
					ie.AsOf = t
				} else {
					ie.NextVisit = &t
				}
			}
			i = j
		case "rate_per_s", "ttl_s", "plan_omega":
			dst := &ie.RatePerS
			switch key {
			case "ttl_s":
				dst = &ie.TTLS
			case "plan_omega":
				dst = &ie.PlanOmega
			}
			if bytes.HasPrefix(b[i:], []byte("null")) {
				*dst, i = nil, i+4
				break
			}
			v, j, ok := scanNumber(b, i)
			if !ok {
				return false
			}
			*dst, i = &v, j
		case "changes", "observations":
			j := i
			if j < len(b) && b[j] == '-' {
				j++
			}
			for j < len(b) && b[j] >= '0' && b[j] <= '9' {
				j++
			}
			if j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E') || !validNumber(b[i:j]) {
				return false // a fraction or exponent: encoding/json refuses it for an int64
			}
			n, err := strconv.ParseInt(string(b[i:j]), 10, 64)
			if err != nil {
				return false
			}
			if key == "changes" {
				ie.Changes = n
			} else {
				ie.Observations = n
			}
			i = j
		case "ci95", "plan_evidence", "plan_prior":
			dst := &ie.CI95
			switch key {
			case "plan_evidence":
				dst = &ie.PlanEvidence
			case "plan_prior":
				dst = &ie.PlanPrior
			}
			if bytes.HasPrefix(b[i:], []byte("null")) {
				*dst, i = nil, i+4
				break
			}
			var ci [2]float64
			if i >= len(b) || b[i] != '[' {
				return false
			}
			lo, j, ok := scanNumber(b, skipSpace(b, i+1))
			if !ok {
				return false
			}
			j = skipSpace(b, j)
			if j >= len(b) || b[j] != ',' {
				return false
			}
			hi, j, ok := scanNumber(b, skipSpace(b, j+1))
			if !ok {
				return false
			}
			j = skipSpace(b, j)
			if j >= len(b) || b[j] != ']' {
				return false
			}
			ci[0], ci[1] = lo, hi
			*dst, i = &ci, j+1
		default:
			for _, k := range [...]string{"object", "site", "kind", "estimator", "as_of", "next_visit", "rate_per_s", "ttl_s", "ci95", "changes", "observations", "plan_evidence", "plan_prior", "plan_omega"} {
				if strings.EqualFold(key, k) {
					return false // encoding/json matches keys case-insensitively
				}
			}
			j, ok := skipValue(b, i)
			if !ok {
				return false
			}
			i = j
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return skipSpace(b, i+1) == len(b)
		default:
			return false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanPlainString reads a string without escapes or control characters
// at b[i:] and returns it and the index after it.
func scanPlainString(b []byte, i int) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", i, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return string(b[i+1 : j]), j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return "", i, false // escapes, control characters, UTF-8 to validate: encoding/json decides
		}
	}
	return "", i, false
}

// scanNumber reads a JSON number at b[i:].
func scanNumber(b []byte, i int) (float64, int, bool) {
	j := i
	for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '-' || b[j] == '+' || b[j] == '.' || b[j] == 'e' || b[j] == 'E') {
		j++
	}
	if j == i || !validNumber(b[i:j]) {
		return 0, i, false
	}
	v, err := strconv.ParseFloat(string(b[i:j]), 64)
	if err != nil {
		return 0, i, false
	}
	return v, j, true
}

// validNumber reports whether lit is a JSON number (RFC 8259 §6).
func validNumber(lit []byte) bool {
	i := 0
	if i < len(lit) && lit[i] == '-' {
		i++
	}
	switch {
	case i < len(lit) && lit[i] == '0':
		i++
	case i < len(lit) && lit[i] >= '1' && lit[i] <= '9':
		for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(lit) && lit[i] == '.' {
		i++
		if i >= len(lit) || lit[i] < '0' || lit[i] > '9' {
			return false
		}
		for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
			i++
		}
	}
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		if i < len(lit) && (lit[i] == '+' || lit[i] == '-') {
			i++
		}
		if i >= len(lit) || lit[i] < '0' || lit[i] > '9' {
			return false
		}
		for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
			i++
		}
	}
	return i == len(lit)
}

// stringEnd returns the index of the quote that ends the string whose
// contents start at b[i:] (a quote preceded by an odd number of
// backslashes is escaped).
func stringEnd(b []byte, i int) (int, bool) {
	for {
		k := bytes.IndexByte(b[i:], '"')
		if k < 0 {
			return 0, false
		}
		j := i + k
		n := 0
		for n < j-i && b[j-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return j, true
		}
		i = j + 1
	}
}

// skipValue returns the index after the JSON value at b[i:], checking its
// nesting and strings but not its scalars (the caller's fields are
// checked; encoding/json decides the rest when a record is not ok).
func skipValue(b []byte, i int) (int, bool) {
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			j, ok := stringEnd(b, i+1)
			if !ok {
				return i, false
			}
			i = j + 1
		case '{', '[':
			depth++
			i++
		case '}', ']':
			if depth == 0 {
				return i, i > 0
			}
			depth--
			i++
		case ',':
			if depth == 0 {
				return i, true
			}
			i++
		default:
			i++
		}
		if depth == 0 && i < len(b) && (b[i] == ',' || b[i] == '}' || b[i] == ']' || b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
			return i, true
		}
	}
	return i, false
}
