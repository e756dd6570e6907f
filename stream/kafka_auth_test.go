package stream_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/stream"
)

// roundTrip writes n keyed messages with a sink and reads them back with a
// source, both built from cfg.
func roundTrip(t *testing.T, cfg stream.KafkaConfig, topic string, n int) {
	t.Helper()
	sink := newSink(t, cfg, nil)
	msgs := keyedMessages(topic, 5, n/5)
	if err := sink.Write(context.Background(), msgs...); err != nil {
		t.Fatalf("write: %v", err)
	}
	col := &collector{}
	stop := runSource(t, newSource(t, cfg, topic, nil), col.handle)
	waitFor(t, "messages", func() bool { return col.count() >= len(msgs) })
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	if got := col.count(); got != len(msgs) {
		t.Fatalf("read %d messages, want %d", got, len(msgs))
	}
}

func TestKafkaSASL(t *testing.T) {
	for _, mech := range []string{stream.SASLPlain, stream.SASLScramSHA256, stream.SASLScramSHA512} {
		t.Run(mech, func(t *testing.T) {
			c := kafkatest.StartWith(t, kafkatest.Options{
				Topics: []kafkatest.Topic{{Name: "t", Partitions: 2}},
				Extra:  []kfake.Opt{kfake.EnableSASL(), kfake.Superuser(mech, "changerate", "s3cret")},
			})
			cfg := testConfig(c, "sasl")
			cfg.SASL = stream.KafkaSASLConfig{Mechanism: mech, Username: "changerate", Password: "s3cret"}
			roundTrip(t, cfg, "t", 50)

			bad := cfg
			bad.SASL.Password = "wrong"
			bad.WriteAttempts = 1
			sink := newSink(t, bad, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := sink.Write(ctx, stream.Message{Topic: "t", Value: []byte("x")}); err == nil {
				t.Fatal("write with a wrong password succeeded")
			}
		})
	}
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key to
// dir and returns the paths and a server TLS config.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, server *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kafkatest"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"kafkatest.local"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return certFile, keyFile, &tls.Config{
		Certificates: []tls.Certificate{pair},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS12,
	}
}

func TestKafkaMutualTLS(t *testing.T) {
	certFile, keyFile, server := selfSigned(t, t.TempDir())
	c := kafkatest.StartWith(t, kafkatest.Options{
		Topics: []kafkatest.Topic{{Name: "t", Partitions: 2}, {Name: "t2", Partitions: 2}},
		Extra:  []kfake.Opt{kfake.TLS(server)},
	})
	cfg := testConfig(c, "tls")
	cfg.TLS = stream.KafkaTLSConfig{Enable: true, CAFile: certFile, CertFile: certFile, KeyFile: keyFile}
	roundTrip(t, cfg, "t", 50)

	// ServerName override: verify against the certificate's DNS name.
	named := cfg
	named.TLS.ServerName = "kafkatest.local"
	named.GroupID = "tls-named"
	roundTrip(t, named, "t2", 50)

	// Without the client certificate the broker refuses the connection.
	anon := cfg
	anon.TLS.CertFile, anon.TLS.KeyFile = "", ""
	anon.WriteAttempts = 1
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := newSink(t, anon, nil).Write(ctx, stream.Message{Topic: "t", Value: []byte("x")}); err == nil {
		t.Fatal("write without a client certificate succeeded")
	}
}
