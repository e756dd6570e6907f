package options

import (
	"fmt"
	"net"
)

// HTTP is a command's HTTP listener. Both commands serve /metrics and
// /healthz on it; the aggregator also serves /readyz, the query API
// (/v1/...) and the pages (/, /objects). Its zero value (no address)
// serves nothing; DefaultHTTP sets a command's default address.
type HTTP struct {
	Addr string `envconfig:"HTTP_ADDR" demo:"true" desc:"listen address of the HTTP server: /metrics and /healthz, and in the aggregator /readyz, the query API /v1/... and the pages / and /objects; empty: none; the aggregator's filter mode starts it only when set explicitly"`
}

// DefaultHTTP is the HTTP group listening on addr by default ("" for
// none).
func DefaultHTTP(addr string) HTTP { return HTTP{Addr: addr} }

// Listen opens the listener; the error names the option. It must not be
// called with an empty Addr.
func (h HTTP) Listen() (net.Listener, error) {
	ln, err := net.Listen("tcp", h.Addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name("HTTP_ADDR"), err)
	}
	return ln, nil
}
