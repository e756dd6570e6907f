// Package buildinfo holds what the build stamped into a binary: the version,
// the source revision and the build date, set by the linker
//
//	go build -trimpath -ldflags "-X github.com/changerate/changerate/internal/buildinfo.Version=v1.2.3 \
//	  -X github.com/changerate/changerate/internal/buildinfo.Revision=$(git rev-parse HEAD) \
//	  -X github.com/changerate/changerate/internal/buildinfo.Date=2026-11-24T04:00:00Z"
//
// (the Dockerfile and `make build` / `make image` pass exactly these), and
// exposes it as the `--version` line of both programs and as the Prometheus
// gauge changerate_build_info. Without the flags (go run, go test) the
// version is "devel" and the revision comes from the Go toolchain's VCS
// stamp when there is one.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Set at link time with -ldflags -X; see the package comment.
var (
	// Version is the release version (a git tag such as v1.2.3, or
	// `git describe` output). Default "devel".
	Version = "devel"
	// Revision is the full source commit. Default: vcs.revision from the
	// toolchain's build information, else "unknown".
	Revision = ""
	// Date is the build time, RFC 3339. Default "unknown".
	Date = ""
)

// Info is the build information of the running binary.
type Info struct {
	Version, Revision, Date, GoVersion, Platform string
}

// Get returns the build information, with defaults for what the linker did
// not set.
func Get() Info {
	i := Info{Version: Version, Revision: Revision, Date: Date, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if i.Version == "" {
		i.Version = "devel"
	}
	if i.Revision == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					i.Revision = s.Value
				}
			}
		}
	}
	if i.Revision == "" {
		i.Revision = "unknown"
	}
	if i.Date == "" {
		i.Date = "unknown"
	}
	return i
}

// String is the `--version` line of program, e.g.
// "aggregator v1.2.3 (revision 0123abc…, built 2026-11-24T04:00:00Z, go1.26.8 linux/amd64)".
func (i Info) String(program string) string {
	return fmt.Sprintf("%s %s (revision %s, built %s, %s %s)", program, i.Version, i.Revision, i.Date, i.GoVersion, i.Platform)
}

// NewCollector returns the gauge changerate_build_info{program, version,
// revision, goversion}, always 1, the usual Prometheus idiom for joining
// build information onto other series (e.g. `* on(pod) group_left(version)`).
func NewCollector(program string) prometheus.Collector {
	i := Get()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "changerate_build_info",
		Help: "Build information of the running binary; always 1.",
		ConstLabels: prometheus.Labels{
			"program": program, "version": i.Version, "revision": i.Revision, "goversion": i.GoVersion,
		},
	})
	g.Set(1)
	return g
}
