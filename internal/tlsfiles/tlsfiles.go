// Package tlsfiles builds client TLS configurations from PEM files that are
// re-read when they change, so that rotated certificates (cert-manager,
// Strimzi's CA renewal, a Kubernetes Secret volume updated in place) are
// used by new connections without restarting the process.
//
// Go's tls.Config has no hook to swap RootCAs on the client side (and a
// VerifyConnection callback does not learn the dialled host when it is an
// IP address), so the clients get a dial function instead of a static
// tls.Config: each new connection is wrapped with a fresh tls.Config holding
// the current CA pool and client certificate and the host as ServerName,
// and crypto/tls verifies it as usual. Files are checked at most once per
// Interval, at the next dial; a file that fails to load keeps the previous
// material (a rotation that has written the certificate but not yet the
// key is picked up at a later check).
package tlsfiles

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"
)

// Interval is how often, at most, the files are checked for changes.
const Interval = 10 * time.Second

// Files names the PEM files of a client TLS configuration.
type Files struct {
	// CAFile is a bundle of CA certificates verifying the server. Default
	// "": the system roots (not reloaded).
	CAFile string
	// CertFile and KeyFile are a client certificate and its key. Default
	// "": no client certificate. Both or neither.
	CertFile, KeyFile string
	// ServerName is the name verified in the server certificate. Default
	// "": the host that was dialled.
	ServerName string
	// InsecureSkipVerify disables verification (testing only).
	InsecureSkipVerify bool
}

// Source holds the TLS material of Files, re-read when the files change.
type Source struct{ r *reloader }

// New loads the files (an error names the unreadable or invalid one).
func New(f Files) (*Source, error) { return newSource(f, time.Now) }

func newSource(f Files, now func() time.Time) (*Source, error) {
	if (f.CertFile == "") != (f.KeyFile == "") {
		return nil, errors.New("tlsfiles: CertFile and KeyFile must be set together")
	}
	r := &reloader{f: f, now: now}
	if err := r.load(true); err != nil {
		return nil, err
	}
	return &Source{r: r}, nil
}

// Config returns a client configuration for a connection to host with the
// current material: the CA pool (nil: the system roots), the client
// certificate, and ServerName = Files.ServerName or host, verified by
// crypto/tls as usual.
func (s *Source) Config(host string) *tls.Config {
	_ = s.r.load(false) // on error the previous material stays
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: s.r.f.ServerName, RootCAs: s.r.pool,
		InsecureSkipVerify: s.r.f.InsecureSkipVerify} //nolint:gosec // the operator's explicit choice
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	if s.r.cert != nil {
		cfg.Certificates = []tls.Certificate{*s.r.cert}
	}
	return cfg
}

// DialFunc dials TCP with dial and completes a TLS handshake with Config of
// the address's host: give it to a client as its dial function instead of
// a static tls.Config, and every new connection uses the current files.
func (s *Source) DialFunc(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("tlsfiles: %w", err)
		}
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := tls.Client(conn, s.Config(host))
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, fmt.Errorf("tlsfiles: TLS handshake with %s: %w", addr, err)
		}
		return tc, nil
	}
}

type reloader struct {
	f   Files
	now func() time.Time

	mu      sync.Mutex
	checked time.Time
	caPEM   []byte
	pool    *x509.CertPool
	certPEM []byte
	keyPEM  []byte
	cert    *tls.Certificate
}

// load re-reads the files if Interval passed since the last check (always
// when force). Material that changed and parses replaces the old one.
func (r *reloader) load(force bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if !force && now.Sub(r.checked) < Interval {
		return nil
	}
	r.checked = now
	var errs []error
	if r.f.CAFile != "" {
		if b, err := os.ReadFile(r.f.CAFile); err != nil {
			errs = append(errs, fmt.Errorf("tlsfiles: CAFile: %w", err))
		} else if !bytes.Equal(b, r.caPEM) {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(b) {
				errs = append(errs, fmt.Errorf("tlsfiles: CAFile %s: no PEM certificates", r.f.CAFile))
			} else {
				r.caPEM, r.pool = b, pool
			}
		}
	}
	if r.f.CertFile != "" {
		c, errC := os.ReadFile(r.f.CertFile)
		k, errK := os.ReadFile(r.f.KeyFile)
		switch {
		case errC != nil || errK != nil:
			errs = append(errs, fmt.Errorf("tlsfiles: CertFile/KeyFile: %w", errors.Join(errC, errK)))
		case !bytes.Equal(c, r.certPEM) || !bytes.Equal(k, r.keyPEM):
			pair, err := tls.X509KeyPair(c, k)
			if err != nil {
				// A rotation writes the two files one after the other:
				// a mismatched pair is retried at the next check.
				errs = append(errs, fmt.Errorf("tlsfiles: %s and %s: %w", r.f.CertFile, r.f.KeyFile, err))
			} else {
				r.certPEM, r.keyPEM, r.cert = c, k, &pair
			}
		}
	}
	return errors.Join(errs...)
}
