package records

import (
	"bufio"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// goldenEstimateRecords returns the encoded estimate records of aggregate's
// golden file (tab-separated: name, key, record).
func goldenEstimateRecords(t testing.TB) [][]byte {
	f, err := os.Open("../aggregate/testdata/estimates.golden")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if i := strings.IndexByte(sc.Text(), '{'); i >= 0 {
			out = append(out, []byte(sc.Text()[i:]))
		}
	}
	if len(out) == 0 {
		t.Fatal("no records in the golden file")
	}
	return out
}

// TestScanEstimateGolden: every golden estimate record is read by
// scanEstimate (no fallback) exactly as json.Unmarshal reads it.
func TestScanEstimateGolden(t *testing.T) {
	for _, rec := range goldenEstimateRecords(t) {
		var got, want EstimateHead
		if err := json.Unmarshal(rec, &want); err != nil {
			t.Fatalf("golden record does not decode: %v", err)
		}
		if !scanEstimate(rec, &got) {
			t.Errorf("scanEstimate fell back on an aggregator record: %s", rec)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("scanEstimate %+v, json.Unmarshal %+v, of %s", got, want, rec)
		}
	}
}

// TestScanEstimateFallsBack: inputs scanEstimate must leave to
// encoding/json.
func TestScanEstimateFallsBack(t *testing.T) {
	for _, in := range []string{
		``, `[]`, `{"object":"a\u0026b"}`, `{"Object":"a"}`, `{"rate_per_s":"1"}`, `{"rate_per_s":01}`,
		`{"ci95":[1,2,3]}`, `{"as_of":"yesterday"}`, `{"object":"a"} x`, `{"object":"a",}`, `{"site":null}`,
		`{"object":"é"}`,
	} {
		var ie EstimateHead
		if scanEstimate([]byte(in), &ie) {
			t.Errorf("scanEstimate accepted %s: %+v", in, ie)
		}
	}
	var ie EstimateHead
	if !scanEstimate([]byte(`{"window":{"a":[1,{"b":"}"}]},"object":"x"}`), &ie) || ie.Object != "x" {
		t.Errorf("scanEstimate did not skip a nested value holding a brace: %+v", ie)
	}
}

// FuzzScanEstimate: where scanEstimate reads a record and encoding/json
// accepts it, both read the same fields.
func FuzzScanEstimate(f *testing.F) {
	for _, rec := range goldenEstimateRecords(f) {
		f.Add(rec)
	}
	f.Add([]byte(`{"object":"a","rate_per_s":null,"ci95":null,"next_visit":null,"x":[{"y":"\""}]}`))
	for _, c := range []string{"0", "-0", "12", "1.5", "1e2", "null", "99999999999999999999", `"3"`} {
		f.Add([]byte(`{"object":"a","kind":"change","changes":` + c + `}`))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got, want EstimateHead
		if !scanEstimate(b, &got) {
			return
		}
		if json.Unmarshal(b, &want) != nil {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("scanEstimate %+v, json.Unmarshal %+v, of %q", got, want, b)
		}
	})
}

// TestScanEstimatePlan: a record with the plan posterior, as
// AppendEstimateJSON writes it, is read by scanEstimate (no fallback)
// exactly as json.Unmarshal reads it, the three values bit for bit.
func TestScanEstimatePlan(t *testing.T) {
	r, ci := 1.25e-6, [2]float64{3e-7, 4e-6}
	ev, pr, pw := [2]float64{2.5, 1.25e6}, [2]float64{0.7734375, 2.2089599609375e5}, 0.2
	e := Estimate{Object: "http://s.example/p", Site: "s.example", Kind: EstimateChange, AsOf: time.Date(2026, 11, 28, 1, 2, 3, 0, time.UTC),
		RatePerS: &r, Estimator: "pooled", CI95: &ci, Observations: 40, Changes: 2, PlanEvidence: &ev, PlanPrior: &pr, PlanOmega: &pw}
	b, ok := AppendEstimateJSON(nil, &e)
	if !ok || !strings.Contains(string(b), `"plan_evidence":[`) {
		t.Fatalf("encoded %s (ok %v)", b, ok)
	}
	var got, want EstimateHead
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if !scanEstimate(b, &got) {
		t.Fatalf("scanEstimate fell back on %s", b)
	}
	if !reflect.DeepEqual(got, want) || got.PlanEvidence == nil || *got.PlanEvidence != ev || *got.PlanPrior != pr || *got.PlanOmega != pw {
		t.Errorf("scanEstimate %+v, json.Unmarshal %+v, of %s", got, want, b)
	}
}
