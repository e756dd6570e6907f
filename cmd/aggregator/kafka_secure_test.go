package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"sigs.k8s.io/yaml"

	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
)

// strimziUsers reads the KafkaUsers of deploy/k8s/strimzi/users.yaml and returns each user's ACLs as kfake
// ACLs, so that the test below runs the programs with exactly the permissions production grants them.
func strimziUsers(t *testing.T) map[string][]kfake.ACL {
	t.Helper()
	b, err := os.ReadFile("../../deploy/k8s/strimzi/users.yaml")
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]kmsg.ACLResourceType{"topic": kmsg.ACLResourceTypeTopic, "group": kmsg.ACLResourceTypeGroup, "cluster": kmsg.ACLResourceTypeCluster}
	ops := map[string]kmsg.ACLOperation{"Read": kmsg.ACLOperationRead, "Write": kmsg.ACLOperationWrite, "Describe": kmsg.ACLOperationDescribe,
		"Create": kmsg.ACLOperationCreate, "Delete": kmsg.ACLOperationDelete, "Alter": kmsg.ACLOperationAlter,
		"DescribeConfigs": kmsg.ACLOperationDescribeConfigs, "AlterConfigs": kmsg.ACLOperationAlterConfigs, "All": kmsg.ACLOperationAll}
	out := map[string][]kfake.ACL{}
	for _, doc := range strings.Split(string(b), "\n---") {
		var u struct {
			Metadata struct{ Name string }
			Spec     struct {
				Authorization struct {
					ACLs []struct {
						Resource   struct{ Type, Name, PatternType string }
						Operations []string
					}
				}
			}
		}
		if err := yaml.Unmarshal([]byte(doc), &u); err != nil {
			t.Fatal(err)
		}
		for _, a := range u.Spec.Authorization.ACLs {
			rt, ok := types[a.Resource.Type]
			if !ok || a.Resource.PatternType != "literal" {
				t.Fatalf("users.yaml: %s: unsupported resource %+v", u.Metadata.Name, a.Resource)
			}
			for _, op := range a.Operations {
				o, ok := ops[op]
				if !ok {
					t.Fatalf("users.yaml: %s: unknown operation %q", u.Metadata.Name, op)
				}
				out[u.Metadata.Name] = append(out[u.Metadata.Name], kfake.ACL{Resource: rt, Name: a.Resource.Name,
					Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: o, Allow: true})
			}
		}
	}
	return out
}

// brokerTLS writes a CA certificate to dir/ca.crt and returns a broker configuration with a certificate it
// signed for 127.0.0.1.
func brokerTLS(t *testing.T, dir string) *tls.Config {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cluster CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "broker"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}
}

// TestKafkaTLSAndSCRAM runs the service end to end over TLS with SCRAM-SHA-512, configured as the prod overlay
// configures it: the CA from a file, the password from a *_FILE, each program as its own user with exactly the
// ACLs of deploy/k8s/strimzi/users.yaml (enforced by the kfake broker). Ingest's Kafka sink writes
// observations as changerate-ingest; the aggregator (run in process, memory store) consumes them as
// changerate-aggregator and publishes estimates; an administrator reads the estimates over TLS+SCRAM with
// franz-go. kcat cannot be the reader here: librdkafka 2.0.2 (Debian's) completes the TLS handshake with kfake,
// certificate and IP SAN verified, then reports "SASL Handshake not supported by broker", because kfake
// advertises SaslHandshake versions 1..1 only (17_sasl_handshake.go: "v0 is not supported") while librdkafka
// sets its SASL_HANDSHAKE feature only when the broker's range includes v0, as every real Kafka broker's does.
func TestKafkaTLSAndSCRAM(t *testing.T) {
	dir := t.TempDir()
	server := brokerTLS(t, dir)
	ca := filepath.Join(dir, "ca.crt")
	acls := strimziUsers(t)
	pw := map[string]string{"changerate-aggregator": "agg-s3cret", "changerate-ingest": "ing-s3cret"}
	opts := []kfake.Opt{kfake.TLS(server), kfake.EnableSASL(), kfake.EnableACLs(), kfake.Superuser("SCRAM-SHA-512", "admin", "admin-pw")}
	for u, p := range pw {
		if len(acls[u]) == 0 {
			t.Fatalf("users.yaml has no ACLs for %s", u)
		}
		opts = append(opts, kfake.User("SCRAM-SHA-512", u, p, acls[u]...))
	}
	var topics []kafkatest.Topic
	for _, n := range []string{"observations", "estimates", "access-reports", "alerts", "dead-letter", "late"} {
		topics = append(topics, kafkatest.Topic{Name: n, Partitions: 3})
	}
	kc := kafkatest.StartWith(t, kafkatest.Options{Topics: topics, Extra: opts, MinSessionTimeout: 100 * time.Millisecond})

	// ingest's side: the stream sink as changerate-ingest.
	ingestCfg := stream.KafkaConfig{Brokers: kc.Addrs(), ClientID: "test-ingest",
		TLS:  stream.KafkaTLSConfig{Enable: true, CAFile: ca},
		SASL: stream.KafkaSASLConfig{Mechanism: stream.SASLScramSHA512, Username: "changerate-ingest", Password: pw["changerate-ingest"]}}
	sink, err := stream.NewKafkaSink(ingestCfg, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var msgs []stream.Message
	const objects = 5
	for i := 0; i < 40; i++ {
		obj := fmt.Sprintf("http://secure.example/%d", i%objects)
		v, _ := json.Marshal(records.Observation{Object: obj, Time: t0.Add(time.Duration(i) * time.Hour), Kind: records.KindAccess})
		msgs = append(msgs, stream.Message{Topic: "observations", Key: []byte(obj), Value: v})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := sink.Write(ctx, msgs...); err != nil {
		t.Fatalf("ingest's write as changerate-ingest: %v", err)
	}
	// The ingest user may not write where it has no ACL: the broker enforces users.yaml.
	bad := stream.Message{Topic: "estimates", Key: []byte("x"), Value: []byte("{}")}
	wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
	if err := sink.Write(wctx, bad); err == nil {
		t.Error("changerate-ingest wrote to estimates: the broker does not enforce the ACLs")
	}
	wcancel()

	// The aggregator, configured like the prod overlay.
	pwFile := filepath.Join(dir, "password")
	if err := os.WriteFile(pwFile, []byte(pw["changerate-aggregator"]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"CHANGERATE_KAFKA_BROKERS": strings.Join(kc.Addrs(), ","), "CHANGERATE_KAFKA_TLS": "true", "CHANGERATE_KAFKA_TLS_CA": ca,
		"CHANGERATE_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512", "CHANGERATE_KAFKA_SASL_USERNAME": "changerate-aggregator",
		"CHANGERATE_KAFKA_SASL_PASSWORD_FILE": pwFile, "CHANGERATE_CREATE_TOPICS": "false", "CHANGERATE_HTTP_ADDR": "",
		"CHANGERATE_EMIT_INTERVAL": "0s", "CHANGERATE_KAFKA_SESSION_TIMEOUT": "6s", "CHANGERATE_KAFKA_HEARTBEAT": "500ms",
		"CHANGERATE_TAKEOVER_DELAY": "1s", "CHANGERATE_LOG_LEVEL": "warn",
	} {
		t.Setenv(k, v)
	}
	actx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- run(actx, nil, strings.NewReader(""), io.Discard, io.Discard) }()

	admin := kc.Client(t, kgo.DialTLSConfig(&tls.Config{RootCAs: poolOf(t, ca), MinVersion: tls.VersionTLS12}),
		kgo.SASL(scram.Auth{User: "admin", Pass: "admin-pw"}.AsSha512Mechanism()), kgo.ConsumeTopics("estimates"))
	seen := map[string]bool{}
	for len(seen) < objects {
		fs := admin.PollFetches(ctx)
		if ctx.Err() != nil {
			stop()
			t.Fatalf("estimates of %d of %d objects before the timeout (aggregator: %v)", len(seen), objects, drain(done))
		}
		fs.EachRecord(func(r *kgo.Record) {
			var e records.Estimate
			if err := json.Unmarshal(r.Value, &e); err == nil && strings.HasPrefix(e.Object, "http://secure.example/") {
				seen[e.Object] = true
			}
		})
	}
	stop()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("aggregator: %v", err)
	}
}

func poolOf(t *testing.T, file string) *x509.CertPool {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p := x509.NewCertPool()
	p.AppendCertsFromPEM(b)
	return p
}

func drain(done chan error) error {
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		return errors.New("still running")
	}
}
