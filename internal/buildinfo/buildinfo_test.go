package buildinfo

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestLinkerValues(t *testing.T) {
	old := [3]string{Version, Revision, Date}
	t.Cleanup(func() { Version, Revision, Date = old[0], old[1], old[2] })
	Version, Revision, Date = "v9.8.7", "0123456789abcdef", "2026-11-24T04:00:00Z"
	got := Get().String("aggregator")
	for _, want := range []string{"aggregator v9.8.7 ", "revision 0123456789abcdef", "built 2026-11-24T04:00:00Z", "go1."} {
		if !strings.Contains(got, want) {
			t.Errorf("String() = %q, want it to contain %q", got, want)
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector("ingest"))
	want := `
# HELP changerate_build_info Build information of the running binary; always 1.
# TYPE changerate_build_info gauge
changerate_build_info{goversion="` + Get().GoVersion + `",program="ingest",revision="0123456789abcdef",version="v9.8.7"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "changerate_build_info"); err != nil {
		t.Error(err)
	}
}

func TestDefaults(t *testing.T) {
	old := [3]string{Version, Revision, Date}
	t.Cleanup(func() { Version, Revision, Date = old[0], old[1], old[2] })
	Version, Revision, Date = "", "", ""
	i := Get()
	if i.Version != "devel" || i.Revision == "" || i.Date != "unknown" {
		t.Errorf("defaults: %+v", i)
	}
}
