package tlsfiles

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

var serial atomic.Int64

func newCA(t *testing.T, name string) *ca {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return &ca{cert: c, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a PEM certificate and key signed by c.
func (c *ca) issue(t *testing.T, cn string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"broker.test"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: k})
}

// server accepts TLS connections with the certificate *cert (swappable), requires a client certificate of
// clientCA, and reports the common name of each client certificate it saw.
func server(t *testing.T, cert *atomic.Pointer[tls.Certificate], clientCA *ca) (string, chan string) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(clientCA.cert)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return cert.Load(), nil },
		ClientAuth:     tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS12,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	seen := make(chan string, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tc := c.(*tls.Conn)
			if err := tc.Handshake(); err == nil {
				seen <- tc.ConnectionState().PeerCertificates[0].Subject.CommonName
			}
			c.Close()
		}
	}()
	return ln.Addr().String(), seen
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	// As a Kubernetes Secret volume does: a new file renamed into place.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func serverPair(t *testing.T, c *ca) *tls.Certificate {
	cp, kp := c.issue(t, "broker", x509.ExtKeyUsageServerAuth)
	return pair(t, cp, kp)
}

func pair(t *testing.T, c, k []byte) *tls.Certificate {
	p, err := tls.X509KeyPair(c, k)
	if err != nil {
		t.Fatal(err)
	}
	return &p
}

// TestReload: a client configuration keeps working across a rotation of its client certificate and of the
// server's CA, picking the new files up at the next handshake after Interval, and still verifies host names.
func TestReload(t *testing.T) {
	dir := t.TempDir()
	caA, caB, clients := newCA(t, "server CA A"), newCA(t, "server CA B"), newCA(t, "client CA")
	var cur atomic.Pointer[tls.Certificate]
	cur.Store(serverPair(t, caA))
	addr, seen := server(t, &cur, clients)

	files := Files{CAFile: filepath.Join(dir, "ca.crt"), CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key")}
	write(t, files.CAFile, caA.pem)
	c1, k1 := clients.issue(t, "client-1", x509.ExtKeyUsageClientAuth)
	write(t, files.CertFile, c1)
	write(t, files.KeyFile, k1)
	clock := time.Now()
	src, err := newSource(files, func() time.Time { return clock })
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(addr)
	var d net.Dialer

	// dial connects to the server under the name host (resolved to 127.0.0.1, as by DNS).
	dial := func(host string) error {
		to127 := func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		}
		conn, err := src.DialFunc(to127)(context.Background(), "tcp", net.JoinHostPort(host, port))
		if err != nil {
			return err
		}
		return conn.Close()
	}
	if err := dial("broker.test"); err != nil {
		t.Fatalf("first handshake: %v", err)
	}
	if got := <-seen; got != "client-1" {
		t.Fatalf("server saw %q", got)
	}
	if err := dial("127.0.0.1"); err != nil { // an IP address: checked against the IP SANs
		t.Fatalf("by IP address: %v", err)
	}
	<-seen
	if err := dial("127.0.0.2"); err == nil {
		t.Error("a certificate for 127.0.0.1 accepted as 127.0.0.2")
	}
	if err := dial("other.test"); err == nil || !strings.Contains(err.Error(), "other.test") {
		t.Errorf("a certificate for broker.test accepted as other.test: %v", err)
	}

	// Rotation of the client certificate.
	c2, k2 := clients.issue(t, "client-2", x509.ExtKeyUsageClientAuth)
	write(t, files.CertFile, c2)
	write(t, files.KeyFile, k2)
	if err := dial("broker.test"); err != nil {
		t.Fatal(err)
	}
	if got := <-seen; got != "client-1" {
		t.Errorf("within Interval the server saw %q, want the cached client-1", got)
	}
	clock = clock.Add(Interval)
	if err := dial("broker.test"); err != nil {
		t.Fatal(err)
	}
	if got := <-seen; got != "client-2" {
		t.Errorf("after the rotation the server saw %q, want client-2", got)
	}

	// The server moves to CA B: refused until the CA file has B.
	cur.Store(serverPair(t, caB))
	if err := dial("broker.test"); err == nil {
		t.Fatal("a server certificate of an untrusted CA accepted")
	}
	write(t, files.CAFile, append(append([]byte{}, caA.pem...), caB.pem...))
	clock = clock.Add(Interval)
	if err := dial("broker.test"); err != nil {
		t.Fatalf("after the CA file got CA B: %v", err)
	}
	<-seen

	// A broken rotation (a key that does not match) keeps the previous material.
	c3, _ := clients.issue(t, "client-3", x509.ExtKeyUsageClientAuth)
	write(t, files.CertFile, c3)
	clock = clock.Add(Interval)
	if err := dial("broker.test"); err != nil {
		t.Fatal(err)
	}
	if got := <-seen; got != "client-2" {
		t.Errorf("with a mismatched pair the server saw %q, want client-2 kept", got)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		f    Files
		want string
	}{
		{"missing CA", Files{CAFile: filepath.Join(dir, "none")}, "CAFile"},
		{"not PEM", Files{CAFile: os.Args[0]}, "no PEM certificates"},
		{"cert without key", Files{CertFile: "x"}, "together"},
		{"missing cert", Files{CertFile: filepath.Join(dir, "c"), KeyFile: filepath.Join(dir, "k")}, "CertFile/KeyFile"},
	} {
		if _, err := New(tc.f); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}
