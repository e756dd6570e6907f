package k8s

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"

	"github.com/changerate/changerate/state"
)

// ---------------------------------------------------------------------------------------------------------------
// Image

// TestImagePinned: every changerate container runs the image `make image` builds, tagged with the VERSION file
// (never :latest), and every other image has an explicit version tag.
func TestImagePinned(t *testing.T) {
	b, err := os.ReadFile("../../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	want := "changerate/changerate:" + strings.TrimSpace(string(b))
	forEachOverlay(t, func(t *testing.T, m *manifests) {
		for _, o := range m.objs {
			if !workloadKinds[o.kind()] {
				continue
			}
			pod := mapAt(o.m, "spec", "template", "spec")
			for _, field := range []string{"initContainers", "containers"} {
				for _, c := range seqAt(pod, field) {
					img := str(c, "image")
					cmd := str(c, "command", 0)
					if cmd == "/aggregator" || cmd == "/ingest" {
						if img != want {
							t.Errorf("%s: container %s runs image %q, want %q (the VERSION file)", o, str(c, "name"), img, want)
						}
						continue
					}
					if _, tag, ok := strings.Cut(img, ":"); !ok || tag == "" || tag == "latest" {
						t.Errorf("%s: container %s: image %q is not pinned to a version", o, str(c, "name"), img)
					}
				}
			}
		}
	})
}

// ---------------------------------------------------------------------------------------------------------------
// Autoscaling

// partitions is the partition count of the observations topic: its KafkaTopic when Strimzi manages it, else
// CHANGERATE_PARTITIONS (the aggregator creates the topic).
func (m *manifests) partitions(t *testing.T) int64 {
	e := m.aggregatorEnv(t)
	name := setting(e, "CHANGERATE_OBSERVATIONS_TOPIC", "observations")
	p, err := strconv.ParseInt(setting(e, "CHANGERATE_PARTITIONS", "12"), 10, 64)
	if err != nil {
		t.Fatalf("CHANGERATE_PARTITIONS: %v", err)
	}
	for _, kt := range typedOf[strimziKafkaTopic](t, m) {
		if kt.Spec.TopicName == name || (kt.Spec.TopicName == "" && kt.Name == name) {
			if int64(kt.Spec.Partitions) != p {
				t.Errorf("KafkaTopic %s has %d partitions but CHANGERATE_PARTITIONS=%d", kt.Name, kt.Spec.Partitions, p)
			}
			return int64(kt.Spec.Partitions)
		}
	}
	return p
}

// TestAutoscaling: prod scales the aggregator with exactly one KEDA ScaledObject (Kafka scaler on the group's
// lag, the aggregator's own brokers, TLS and SASL), prod-hpa with exactly one HPA; the maximum is the partition
// count; no Deployment sets replicas that an autoscaler owns.
func TestAutoscaling(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, m *manifests) {
		agg := m.aggregatorDeployment(t)
		e := m.aggregatorEnv(t)
		parts := m.partitions(t)
		group := setting(e, "CHANGERATE_KAFKA_GROUP", "changerate-aggregator")
		topic := setting(e, "CHANGERATE_OBSERVATIONS_TOPIC", "observations")
		var sos []*kedaScaledObject
		for _, so := range typedOf[kedaScaledObject](t, m) {
			if so.Namespace == agg.namespace() && so.Spec.ScaleTargetRef.Name == agg.name() {
				sos = append(sos, so)
			}
		}
		var hpas []*autoscalingv2.HorizontalPodAutoscaler
		for _, h := range typedOf[autoscalingv2.HorizontalPodAutoscaler](t, m) {
			if h.Namespace == agg.namespace() && h.Spec.ScaleTargetRef.Kind == "Deployment" && h.Spec.ScaleTargetRef.Name == agg.name() {
				hpas = append(hpas, h)
			}
		}
		want := map[string][2]int{"overlays/dev": {0, 0}, "overlays/prod": {1, 0}, "overlays/prod-hpa": {0, 1}}[m.name]
		if len(sos) != want[0] || len(hpas) != want[1] {
			t.Fatalf("%d ScaledObjects and %d HPAs target %s, want %d and %d", len(sos), len(hpas), agg, want[0], want[1])
		}
		if len(sos)+len(hpas) > 0 && get(agg.m, "spec", "replicas") != nil {
			t.Errorf("%s: sets replicas, which the autoscaler owns (re-applying would reset it)", agg)
		}
		for _, so := range sos {
			s := so.Spec
			if s.MinReplicaCount == nil || *s.MinReplicaCount < 1 || s.MaxReplicaCount == nil || int64(*s.MaxReplicaCount) != parts {
				t.Errorf("ScaledObject %s: replicas %s..%s, want 1.. and max = %d partitions", so.Name, deref(s.MinReplicaCount), deref(s.MaxReplicaCount), parts)
			}
			if len(s.Triggers) != 1 || s.Triggers[0].Type != "kafka" {
				t.Fatalf("ScaledObject %s: want one kafka trigger, got %+v", so.Name, s.Triggers)
			}
			md := s.Triggers[0].Metadata
			known := []string{"bootstrapServers", "consumerGroup", "topic", "lagThreshold", "activationLagThreshold", "offsetResetPolicy",
				"allowIdleConsumers", "scaleToZeroOnInvalidOffset", "excludePersistentLag", "limitToPartitionsWithLag", "sasl", "tls", "version"}
			for k := range md {
				if !slices.Contains(known, k) {
					t.Errorf("ScaledObject %s: unknown kafka scaler parameter %q", so.Name, k)
				}
			}
			if md["consumerGroup"] != group || md["topic"] != topic {
				t.Errorf("ScaledObject %s: group %q topic %q, want %q %q", so.Name, md["consumerGroup"], md["topic"], group, topic)
			}
			if md["bootstrapServers"] != e["CHANGERATE_KAFKA_BROKERS"] {
				t.Errorf("ScaledObject %s: bootstrapServers %q, but the aggregator uses %q", so.Name, md["bootstrapServers"], e["CHANGERATE_KAFKA_BROKERS"])
			}
			if n, err := strconv.Atoi(md["lagThreshold"]); err != nil || n < 1 {
				t.Errorf("ScaledObject %s: lagThreshold %q", so.Name, md["lagThreshold"])
			}
			if md["allowIdleConsumers"] == "true" {
				t.Errorf("ScaledObject %s: allowIdleConsumers lets KEDA scale past the partitions", so.Name)
			}
			wantTLS := map[bool]string{true: "enable", false: ""}[e["CHANGERATE_KAFKA_TLS"] == "true"]
			if md["tls"] != wantTLS && !(wantTLS == "" && md["tls"] == "disable") {
				t.Errorf("ScaledObject %s: tls %q, but CHANGERATE_KAFKA_TLS=%q", so.Name, md["tls"], e["CHANGERATE_KAFKA_TLS"])
			}
			wantSASL := map[string]string{"": "", "PLAIN": "plaintext", "SCRAM-SHA-256": "scram_sha256", "SCRAM-SHA-512": "scram_sha512"}[e["CHANGERATE_KAFKA_SASL_MECHANISM"]]
			if md["sasl"] != wantSASL && !(wantSASL == "" && md["sasl"] == "none") {
				t.Errorf("ScaledObject %s: sasl %q, but CHANGERATE_KAFKA_SASL_MECHANISM=%q", so.Name, md["sasl"], e["CHANGERATE_KAFKA_SASL_MECHANISM"])
			}
			if wantSASL == "" && wantTLS == "" {
				continue
			}
			ref := s.Triggers[0].AuthenticationRef
			if ref == nil {
				t.Fatalf("ScaledObject %s: TLS/SASL without an authenticationRef", so.Name)
			}
			var params []string
			for _, ta := range typedOf[kedaTriggerAuthentication](t, m) {
				if ta.Name == ref.Name && ta.Namespace == so.Namespace {
					for _, r := range ta.Spec.SecretTargetRef {
						params = append(params, r.Parameter)
						if !m.secretKnown(r.Name) {
							t.Errorf("TriggerAuthentication %s: Secret %q is neither in the manifests nor created by Strimzi", ta.Name, r.Name)
						}
					}
				}
			}
			for _, p := range []string{"username", "password", "ca"} {
				if !slices.Contains(params, p) {
					t.Errorf("TriggerAuthentication %s: no %s", ref.Name, p)
				}
			}
		}
		for _, h := range hpas {
			if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 1 || int64(h.Spec.MaxReplicas) != parts {
				t.Errorf("HPA %s: replicas %s..%d, want 1.. and max = %d partitions", h.Name, deref(h.Spec.MinReplicas), h.Spec.MaxReplicas, parts)
			}
			lag := false
			for _, mt := range h.Spec.Metrics {
				if mt.Type == autoscalingv2.ExternalMetricSourceType && mt.External != nil && strings.Contains(mt.External.Metric.Name, "lag") &&
					mt.External.Metric.Selector != nil && mt.External.Metric.Selector.MatchLabels["consumergroup"] == group {
					lag = true
				}
			}
			if !lag {
				t.Errorf("HPA %s: no External consumer-lag metric of group %q", h.Name, group)
			}
		}
	})
}

// ---------------------------------------------------------------------------------------------------------------
// Strimzi: topics and least-privilege users

// strimziSecrets are the Secrets Strimzi creates (copied into namespace changerate, docs/deploying.md): one per
// KafkaUser (its name) and the cluster CA "<cluster>-cluster-ca-cert".
func (m *manifests) strimziSecrets(t *testing.T) map[string]bool {
	out := map[string]bool{}
	for _, o := range m.objs {
		if o.kind() == "KafkaUser" {
			out[o.name()] = true
		}
		if c := str(o.m, "metadata", "labels", "strimzi.io/cluster"); c != "" {
			out[c+"-cluster-ca-cert"] = true
		}
	}
	return out
}

func (m *manifests) secretKnown(name string) bool {
	if _, ok := m.find("Secret", "changerate", name); ok {
		return true
	}
	return m.strimziSecrets(nil)[name]
}

type acl struct{ resource, name, op string }

// TestStrimziUsers: in overlays with Strimzi, every topic the programs use has a KafkaTopic (estimates
// compacted, partitions as configured); each program authenticates as its own KafkaUser with the SASL
// mechanism it is configured for, and that user's ACLs are exactly what the program does — literal names, no
// wildcard, no prefix, no All — as is the KEDA user's (Describe only).
func TestStrimziUsers(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, m *manifests) {
		users := map[string]*strimziKafkaUser{}
		for _, u := range typedOf[strimziKafkaUser](t, m) {
			users[u.Name] = u
		}
		if len(users) == 0 {
			if m.name != "overlays/dev" {
				t.Fatal("no KafkaUser")
			}
			t.Skip("no Strimzi in this overlay")
		}
		topics := map[string]*strimziKafkaTopic{}
		for _, kt := range typedOf[strimziKafkaTopic](t, m) {
			n := kt.Spec.TopicName
			if n == "" {
				n = kt.Name
			}
			topics[n] = kt
			if kt.Labels["strimzi.io/cluster"] == "" || kt.Namespace == "" {
				t.Errorf("KafkaTopic %s: no strimzi.io/cluster label or namespace", kt.Name)
			}
		}
		e := m.aggregatorEnv(t)
		obs := setting(e, "CHANGERATE_OBSERVATIONS_TOPIC", "observations")
		outs := []string{
			setting(e, "CHANGERATE_ESTIMATES_TOPIC", "estimates"), setting(e, "CHANGERATE_ACCESS_REPORTS_TOPIC", "access-reports"),
			setting(e, "CHANGERATE_ALERTS_TOPIC", "alerts"), setting(e, "CHANGERATE_DEAD_LETTER_TOPIC", "dead-letter"),
			setting(e, "CHANGERATE_LATE_TOPIC", "late"),
		}
		for _, n := range append([]string{obs}, outs...) {
			if topics[n] == nil {
				t.Errorf("no KafkaTopic for topic %q", n)
			}
		}
		if kt := topics[outs[0]]; kt != nil && !slices.Contains(strings.Split(kt.Spec.Config["cleanup.policy"], ","), "compact") {
			t.Errorf("KafkaTopic %s: cleanup.policy %q, want compact", kt.Name, kt.Spec.Config["cleanup.policy"])
		}
		if setting(e, "CHANGERATE_CREATE_TOPICS", "true") != "false" {
			t.Error("CHANGERATE_CREATE_TOPICS is not false although Strimzi manages the topics (and the user may not create them)")
		}
		group := setting(e, "CHANGERATE_KAFKA_GROUP", "changerate-aggregator")
		need := map[string][]acl{}
		var aggUser, ingestUser string
		for _, c := range m.containers(t) {
			ce := m.env(t, c)
			u := ce["CHANGERATE_KAFKA_SASL_USERNAME"]
			if u == "" {
				t.Errorf("%s: no CHANGERATE_KAFKA_SASL_USERNAME", c)
				continue
			}
			if ce["CHANGERATE_KAFKA_SASL_MECHANISM"] != "SCRAM-SHA-512" || ce["CHANGERATE_KAFKA_TLS"] != "true" {
				t.Errorf("%s: SASL %q TLS %q, want SCRAM-SHA-512 over TLS", c, ce["CHANGERATE_KAFKA_SASL_MECHANISM"], ce["CHANGERATE_KAFKA_TLS"])
			}
			switch c.binary {
			case "aggregator":
				aggUser = u
				need[u] = append(need[u], acl{"topic", obs, "Read"}, acl{"topic", obs, "Describe"}, acl{"group", group, "Read"})
				for _, o := range outs {
					need[u] = append(need[u], acl{"topic", o, "Write"}, acl{"topic", o, "Describe"})
				}
			case "ingest":
				ingestUser = u
				for _, o := range []string{setting(ce, "CHANGERATE_OBSERVATIONS_TOPIC", "observations"), setting(ce, "CHANGERATE_DEAD_LETTER_TOPIC", "dead-letter")} {
					need[u] = append(need[u], acl{"topic", o, "Write"}, acl{"topic", o, "Describe"})
				}
			}
		}
		if aggUser == ingestUser {
			t.Errorf("aggregator and ingest share the Kafka user %q", aggUser)
		}
		for _, ta := range typedOf[kedaTriggerAuthentication](t, m) {
			for _, r := range ta.Spec.SecretTargetRef {
				if r.Parameter == "password" {
					need[r.Name] = []acl{{"topic", obs, "Describe"}, {"group", group, "Describe"}}
				}
			}
		}
		for name, want := range need {
			u := users[name]
			if u == nil {
				t.Errorf("no KafkaUser %q", name)
				continue
			}
			if u.Spec.Authentication.Type != "scram-sha-512" || u.Spec.Authorization.Type != "simple" {
				t.Errorf("KafkaUser %s: authentication %q authorization %q, want scram-sha-512 and simple", name, u.Spec.Authentication.Type, u.Spec.Authorization.Type)
			}
			var got []acl
			for _, a := range u.Spec.Authorization.ACLs {
				if a.Resource.PatternType != "literal" || strings.Contains(a.Resource.Name, "*") || (a.Host != "" && a.Host != "*") {
					t.Errorf("KafkaUser %s: ACL on %s %q is not a literal name (pattern %q)", name, a.Resource.Type, a.Resource.Name, a.Resource.PatternType)
				}
				for _, op := range a.Operations {
					got = append(got, acl{a.Resource.Type, a.Resource.Name, op})
				}
			}
			for _, w := range want {
				if !slices.Contains(got, w) {
					t.Errorf("KafkaUser %s lacks %s on %s %q, which its program needs", name, w.op, w.resource, w.name)
				}
			}
			for _, g := range got {
				if !slices.Contains(want, g) {
					t.Errorf("KafkaUser %s grants %s on %s %q, which its program does not need", name, g.op, g.resource, g.name)
				}
			}
		}
		for name := range users {
			if need[name] == nil {
				t.Errorf("KafkaUser %s is used by no program", name)
			}
		}
	})
}

// ---------------------------------------------------------------------------------------------------------------
// Secrets as files

// TestSecretsAreFiles: no password is a literal value or an environment variable from a Secret; every *_FILE and
// TLS file a program is configured with lies in a read-only volume mounted from a Secret that has that file.
func TestSecretsAreFiles(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, m *manifests) {
		for _, c := range m.containers(t) {
			e := m.env(t, c)
			for k := range e {
				if strings.HasSuffix(k, "_PASSWORD") {
					t.Errorf("%s: %s is set directly; use %s_FILE with a mounted Secret", c, k, k)
				}
			}
			for k, path := range e {
				if !strings.HasSuffix(k, "_FILE") && !regexp.MustCompile(`_TLS_(CA|CERT|KEY)$`).MatchString(k) {
					continue
				}
				if !m.mountedFromSecret(c, path) {
					t.Errorf("%s: %s=%s is not a file of a Secret volume mounted read-only", c, k, path)
				}
			}
		}
	})
}

// mountedFromSecret reports whether path is a file of a Secret volume mounted read-only in c.
func (m *manifests) mountedFromSecret(c container, path string) bool {
	for _, vm := range seqAt(c.c, "volumeMounts") {
		dir := str(vm, "mountPath")
		rel, err := filepath.Rel(dir, path)
		if err != nil || strings.HasPrefix(rel, "..") || get(vm, "readOnly") != true {
			continue
		}
		for _, v := range seqAt(c.pod, "volumes") {
			if str(v, "name") != str(vm, "name") || get(v, "secret") == nil {
				continue
			}
			if !m.secretKnown(str(v, "secret", "secretName")) {
				return false
			}
			for _, it := range seqAt(v, "secret", "items") {
				if str(it, "path") == rel {
					return true
				}
			}
		}
	}
	return false
}

// ---------------------------------------------------------------------------------------------------------------
// Network policy

// TestNetworkPolicy: a default deny covers every pod of the namespace for ingress and egress; the aggregator
// may reach the ports of its Kafka brokers and Redis, ingest its brokers, and Prometheus their metrics ports.
func TestNetworkPolicy(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, m *manifests) {
		var nps []*networkingv1.NetworkPolicy
		deny := false
		for _, np := range typedOf[networkingv1.NetworkPolicy](t, m) {
			if np.Namespace != "changerate" {
				continue
			}
			nps = append(nps, np)
			if len(np.Spec.PodSelector.MatchLabels) == 0 && len(np.Spec.PodSelector.MatchExpressions) == 0 &&
				len(np.Spec.Ingress) == 0 && len(np.Spec.Egress) == 0 &&
				slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) && slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
				deny = true
			}
		}
		if !deny {
			t.Error("no default-deny NetworkPolicy (empty podSelector, Ingress and Egress, no rules) in namespace changerate")
		}
		egressPorts := func(labels map[string]any) map[int32]bool {
			out := map[int32]bool{}
			for _, np := range nps {
				if !labelsMatchStr(np.Spec.PodSelector.MatchLabels, labels) {
					continue
				}
				for _, r := range np.Spec.Egress {
					for _, p := range r.Ports {
						if p.Port != nil {
							out[p.Port.IntVal] = true
						}
					}
				}
			}
			return out
		}
		ingressPorts := func(labels map[string]any) map[string]bool {
			out := map[string]bool{}
			for _, np := range nps {
				if !labelsMatchStr(np.Spec.PodSelector.MatchLabels, labels) {
					continue
				}
				for _, r := range np.Spec.Ingress {
					for _, p := range r.Ports {
						if p.Port != nil {
							out[p.Port.String()] = true
						}
					}
				}
			}
			return out
		}
		portOf := func(addr string) int32 {
			_, p, err := net.SplitHostPort(addr)
			if err != nil {
				t.Fatalf("address %q: %v", addr, err)
			}
			n, _ := strconv.Atoi(p)
			return int32(n)
		}
		for _, c := range m.containers(t) {
			labels := mapAt(c.owner.m, "spec", "template", "metadata", "labels")
			e := m.env(t, c)
			eg := egressPorts(labels)
			need := []string{"CHANGERATE_KAFKA_BROKERS"}
			if c.binary == "aggregator" {
				need = append(need, "CHANGERATE_REDIS_ADDRS")
			}
			for _, v := range need {
				for _, a := range strings.Split(e[v], ",") {
					if p := portOf(a); !eg[p] {
						t.Errorf("%s: no NetworkPolicy lets it reach port %d of %s=%s", c, p, v, a)
					}
				}
			}
			// With Sentinel, REDIS_ADDRS are the Sentinels; the data nodes they name listen on 6379.
			if c.binary == "aggregator" && e["CHANGERATE_REDIS_SENTINEL_MASTER"] != "" && !eg[6379] {
				t.Errorf("%s: no NetworkPolicy lets it reach the Redis data nodes (6379) the Sentinels name", c)
			}
			if !eg[53] {
				t.Errorf("%s: no DNS egress", c)
			}
			in := ingressPorts(labels)
			for _, p := range seqAt(c.c, "ports") {
				if !in[str(p, "name")] {
					t.Errorf("%s: port %s is not open to Prometheus", c, str(p, "name"))
				}
			}
		}
	})
}

func deref(p *int32) string {
	if p == nil {
		return "unset"
	}
	return strconv.Itoa(int(*p))
}

func labelsMatchStr(selector map[string]string, labels map[string]any) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// ---------------------------------------------------------------------------------------------------------------
// Redis

// TestRedisACLMatchesCode: the users.acl of the Redis examples gives the user "changerate" exactly
// state.RedisACLRules for the aggregator's configuration (the rules state's TestLeastPrivilegeACL runs the
// store with), and their redis.conf has the settings the aggregator checks at start.
func TestRedisACLMatchesCode(t *testing.T) {
	for _, tc := range []struct {
		dir, secret string
		cluster     bool
	}{{"redis/sentinel", "redis-config", false}, {"redis/cluster", "redis-cluster-config", true}} {
		t.Run(tc.dir, func(t *testing.T) {
			prod := render(t, "overlays/prod")
			e := prod.aggregatorEnv(t)
			cfg := state.RedisConfig{KeyPrefix: setting(e, "CHANGERATE_REDIS_KEY_PREFIX", "cr:"), KeyFormat: setting(e, "CHANGERATE_REDIS_KEY_FORMAT", "buckets"),
				ExpiryEvents: setting(e, "CHANGERATE_REDIS_EXPIRY_EVENTS", "config"), Cluster: tc.cluster}
			m := render(t, tc.dir)
			sec, ok := m.find("Secret", "redis", tc.secret)
			if !ok {
				t.Fatalf("no Secret redis/%s", tc.secret)
			}
			d := data(sec)
			var line string
			for _, l := range strings.Split(d["users.acl"], "\n") {
				if strings.HasPrefix(l, "user "+setting(e, "CHANGERATE_REDIS_USERNAME", "changerate")+" ") {
					line = l
				}
			}
			f := strings.Fields(line)
			if len(f) < 4 || f[2] != "on" || !strings.HasPrefix(f[3], ">") {
				t.Fatalf("users.acl: no line \"user <REDIS_USERNAME> on >password ...\": %q", d["users.acl"])
			}
			if got, want := strings.Join(f[4:], " "), state.RedisACLRules(cfg); got != want {
				t.Errorf("users.acl rules of the changerate user:\n got %s\nwant %s (state.RedisACLRules)", got, want)
			}
			conf := d["redis.conf"]
			for _, want := range []string{"appendonly yes", "maxmemory-policy noeviction", "notify-keyspace-events Ex"} {
				if !strings.Contains(conf, "\n"+want+"\n") && !strings.HasPrefix(conf, want+"\n") {
					t.Errorf("redis.conf lacks %q", want)
				}
			}
		})
	}
	prod := render(t, "overlays/prod")
	e := prod.aggregatorEnv(t)
	if e["CHANGERATE_REDIS_SENTINEL_MASTER"] == "" || e["CHANGERATE_REDIS_EXPIRY_EVENTS"] != "subscribe" {
		t.Errorf("prod: REDIS_SENTINEL_MASTER %q REDIS_EXPIRY_EVENTS %q, want a master name and subscribe (no CONFIG permission)",
			e["CHANGERATE_REDIS_SENTINEL_MASTER"], e["CHANGERATE_REDIS_EXPIRY_EVENTS"])
	}
	if v, ok := e["CHANGERATE_REDIS_REQUIRE_DURABLE"]; ok && v != "true" {
		t.Errorf("prod: CHANGERATE_REDIS_REQUIRE_DURABLE=%s", v)
	}
}

// ---------------------------------------------------------------------------------------------------------------
// Monitoring

// metricNames are the metric names the programs register, read from the Go sources (Name: "changerate_..." and
// the aggregator's Namespace + Name), plus their histogram series.
func metricNames(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	full := regexp.MustCompile(`"(changerate_[a-z0-9_]+)"`)
	ns := regexp.MustCompile(`const ns = "(changerate_[a-z_]+)"`)
	short := regexp.MustCompile(`Name: +"([a-z0-9_]+)"`)
	nsPlus := regexp.MustCompile(`\bns ?\+ ?"(_[a-z0-9_]+)"`)
	err := filepath.WalkDir("../..", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && p != "../.." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, mm := range full.FindAllSubmatch(b, -1) {
			out[string(mm[1])] = true
		}
		if n := ns.FindSubmatch(b); n != nil {
			for _, mm := range short.FindAllSubmatch(b, -1) {
				out[string(n[1])+"_"+string(mm[1])] = true
			}
			// Names built from ns in the same file: ns+"_event_time_lag_seconds".
			for _, mm := range nsPlus.FindAllSubmatch(b, -1) {
				out[string(n[1])+string(mm[1])] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for n := range out {
		for _, s := range []string{"_bucket", "_sum", "_count"} {
			out[n+s] = true
		}
	}
	return out
}

var metricRef = regexp.MustCompile(`\bchangerate_[a-z0-9_]+`)

func checkMetricRefs(t *testing.T, where, expr string, known map[string]bool) {
	for _, n := range metricRef.FindAllString(expr, -1) {
		if !known[n] {
			t.Errorf("%s: metric %s is not registered by the programs", where, n)
		}
	}
}

// TestMonitoring: the ServiceMonitor selects the aggregator's Service and port, the PodMonitor ingest's pods
// and port; the PrometheusRule has the alerts the runbook needs, refers only to metrics the programs export,
// passes `promtool check rules` and its unit tests (`promtool test rules` with alerts_test.yaml); the dashboard
// is valid JSON covering throughput, lag, latency, state, estimates and alerts, on registered metrics.
func TestMonitoring(t *testing.T) {
	known := metricNames(t)
	for _, n := range []string{"changerate_build_info", "changerate_aggregator_event_time_lag_seconds", "changerate_aggregator_batch_messages"} {
		if !known[n] {
			t.Fatalf("metric scan found no %s: the scan is broken", n)
		}
	}
	m := render(t, "overlays/prod")
	agg := m.aggregatorDeployment(t)
	sms := typedOf[monitoringv1.ServiceMonitor](t, m)
	if len(sms) != 1 {
		t.Fatalf("%d ServiceMonitors, want 1", len(sms))
	}
	found := false
	for _, svc := range typedOf[corev1.Service](t, m) {
		if svc.Namespace != sms[0].Namespace || !labelsMatchStr(sms[0].Spec.Selector.MatchLabels, anyMap(svc.Labels)) {
			continue
		}
		if !labelsMatchStr(svc.Spec.Selector, mapAt(agg.m, "spec", "template", "metadata", "labels")) {
			t.Errorf("ServiceMonitor %s selects Service %s, which is not the aggregator's", sms[0].Name, svc.Name)
		}
		for _, ep := range sms[0].Spec.Endpoints {
			ok := false
			for _, p := range svc.Spec.Ports {
				ok = ok || p.Name == ep.Port
			}
			if !ok || ep.Path != "/metrics" {
				t.Errorf("ServiceMonitor %s: endpoint port %q path %q, not a port of Service %s serving /metrics", sms[0].Name, ep.Port, ep.Path, svc.Name)
			}
		}
		found = true
	}
	if !found {
		t.Errorf("ServiceMonitor %s selects no Service", sms[0].Name)
	}
	pms := typedOf[monitoringv1.PodMonitor](t, m)
	ingest := false
	for _, c := range m.containers(t) {
		if c.binary != "ingest" {
			continue
		}
		for _, pm := range pms {
			if labelsMatchStr(pm.Spec.Selector.MatchLabels, mapAt(c.owner.m, "spec", "template", "metadata", "labels")) {
				for _, ep := range pm.Spec.PodMetricsEndpoints {
					if _, ok := containerPort(c, ptrStr(ep.Port)); ok {
						ingest = true
					}
				}
			}
		}
	}
	if !ingest {
		t.Error("no PodMonitor scrapes the ingest pods' metrics port")
	}

	rules := typedOf[monitoringv1.PrometheusRule](t, m)
	if len(rules) != 1 {
		t.Fatalf("%d PrometheusRules, want 1", len(rules))
	}
	var alerts []string
	for _, g := range rules[0].Spec.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			checkMetricRefs(t, "alert "+r.Alert, r.Expr.String(), known)
		}
	}
	for _, want := range []string{"ChangerateConsumerLagGrowing", "ChangerateEventTimeLag", "ChangerateDeadLetters", "ChangerateLateEvents",
		"ChangerateFencedCommits", "ChangerateRedisErrors", "ChangeratePartitionStopped"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("PrometheusRule lacks alert %s", want)
		}
	}
	promtool(t, rules[0])

	b, err := os.ReadFile("components/monitoring/dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID    string `json:"uid"`
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	var rows []string
	for _, p := range dash.Panels {
		if p.Type == "row" {
			rows = append(rows, p.Title)
		}
		for _, tg := range p.Targets {
			checkMetricRefs(t, "dashboard panel "+p.Title, tg.Expr, known)
		}
	}
	for _, want := range []string{"Throughput", "Lag", "Latency", "State", "Estimates and alerts"} {
		if !slices.Contains(rows, want) {
			t.Errorf("dashboard lacks the row %q (has %v)", want, rows)
		}
	}
	cm, ok := m.find("ConfigMap", "changerate", "changerate-dashboard")
	if !ok || data(cm)["changerate.json"] != string(b) || str(cm.m, "metadata", "labels", "grafana_dashboard") != "1" {
		t.Error("the dashboard ConfigMap does not hold dashboard.json with label grafana_dashboard=1")
	}
}

func anyMap(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func ptrStr(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

// promtool writes the rule's groups as a Prometheus rules file and runs promtool check rules and promtool test
// rules (alerts_test.yaml) on it. make test installs promtool (Debian's prometheus package); without it the
// test skips unless CHANGERATE_REQUIRE_PROMTOOL is set.
func promtool(t *testing.T, rule *monitoringv1.PrometheusRule) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CHANGERATE_REQUIRE_PROMTOOL") != "" {
			t.Fatal("promtool is not installed (apt-get install prometheus)")
		}
		t.Log("promtool is not installed: rules not checked (apt-get install prometheus)")
		return
	}
	dir := t.TempDir()
	y, err := yaml.Marshal(map[string]any{"groups": rule.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), y, 0o644); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile("components/monitoring/alerts_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		} else {
			t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
		}
	}
}

// ---------------------------------------------------------------------------------------------------------------
// Layout

// TestKustomizationsListEveryFile: every YAML file of a kustomization directory is one of its resources,
// patches or generator inputs (a file nobody lists is never applied), and every object has a namespace:
// changerate for changerate's own, the Strimzi namespace for KafkaTopic/KafkaUser.
func TestKustomizationsListEveryFile(t *testing.T) {
	dirs, err := filepath.Glob("*/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("*/*/kustomization.yaml")
	for _, k := range append(dirs, more...) {
		dir := filepath.Dir(k)
		b, err := os.ReadFile(k)
		if err != nil {
			t.Fatal(err)
		}
		var kz struct {
			Resources  []string `json:"resources"`
			Components []string `json:"components"`
			Patches    []struct {
				Path string `json:"path"`
			} `json:"patches"`
			ConfigMapGenerator []struct {
				Files []string `json:"files"`
			} `json:"configMapGenerator"`
		}
		if err := yaml.Unmarshal(b, &kz); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		listed := append([]string{}, kz.Resources...)
		for _, p := range kz.Patches {
			listed = append(listed, p.Path)
		}
		for _, g := range kz.ConfigMapGenerator {
			for _, f := range g.Files {
				_, file, ok := strings.Cut(f, "=")
				if !ok {
					file = f
				}
				listed = append(listed, file)
			}
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		js, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		for _, f := range append(files, js...) {
			base := filepath.Base(f)
			if base == "kustomization.yaml" || base == "alerts_test.yaml" {
				continue
			}
			if !slices.Contains(listed, base) {
				t.Errorf("%s does not list %s", k, base)
			}
		}
	}
	forEachOverlay(t, func(t *testing.T, m *manifests) {
		for _, o := range m.objs {
			switch {
			case o.kind() == "Namespace":
			case o.kind() == "KafkaTopic" || o.kind() == "KafkaUser":
				if o.namespace() == "" {
					t.Errorf("%s: no namespace", o)
				}
			case str(o.m, "metadata", "labels", "app.kubernetes.io/part-of") == "changerate" || strings.HasPrefix(o.name(), "changerate"):
				if o.namespace() != "changerate" {
					t.Errorf("%s: want namespace changerate", o)
				}
			default:
				if _, ok := m.find("Namespace", "", o.namespace()); !ok && o.namespace() != "changerate" {
					t.Errorf("%s: namespace %q is not created by the overlay", o, o.namespace())
				}
			}
		}
	})
}

// TestPlaceholders: every password in a Secret of the manifests is a marked placeholder.
func TestPlaceholders(t *testing.T) {
	pw := regexp.MustCompile(`(?:>|masterauth |auth-pass \S+ )(\S+)`)
	forEachOverlay(t, func(t *testing.T, m *manifests) {
		for _, s := range typedOf[corev1.Secret](t, m) {
			for k, v := range s.StringData {
				if k == "password" && !strings.HasPrefix(v, "CHANGE-ME") {
					t.Errorf("Secret %s/%s: %s is not a CHANGE-ME placeholder", s.Namespace, s.Name, k)
				}
				for _, mm := range pw.FindAllStringSubmatch(v, -1) {
					if !strings.HasPrefix(mm[1], "CHANGE-ME") {
						t.Errorf("Secret %s/%s: %s holds a password %q that is not a CHANGE-ME placeholder", s.Namespace, s.Name, k, mm[1])
					}
				}
			}
		}
	})
}

// parseBytes reads a byte size as the programs' configuration writes it: an integer, optionally with a unit
// (KiB, MiB, GiB, Ki, Mi, Gi, KB, MB, GB, B).
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n * mult, err
}

// TestCacheFitsMemoryLimit: the aggregator's object cache (CHANGERATE_CACHE_BYTES, as set in the manifests or
// its default) takes at most half of the container's memory limit, leaving the rest to batches in flight,
// encoding buffers, Kafka and Redis clients and the Go runtime; GOMEMLIMIT, when set, is below the limit.
func TestCacheFitsMemoryLimit(t *testing.T) {
	acceptedVars(t)
	def, ok := defaultsOf["aggregator"]["CHANGERATE_CACHE_BYTES"]
	if !ok && !accepted["aggregator"]["CHANGERATE_CACHE_BYTES"] {
		t.Fatal("the aggregator accepts no CHANGERATE_CACHE_BYTES: the cache is not bounded in bytes")
	}
	forEachOverlay(t, func(t *testing.T, m *manifests) {
		for _, c := range m.containers(t) {
			if c.binary != "aggregator" {
				continue
			}
			var ctr corev1.Container
			b, _ := json.Marshal(c.c)
			if err := json.Unmarshal(b, &ctr); err != nil {
				t.Fatal(err)
			}
			limit := ctr.Resources.Limits.Memory().Value()
			e := m.env(t, c)
			v := setting(e, "CHANGERATE_CACHE_BYTES", def)
			cache, err := parseBytes(v)
			if err != nil {
				t.Fatalf("%s: CHANGERATE_CACHE_BYTES=%q: %v", c, v, err)
			}
			if cache <= 0 || 2*cache > limit {
				t.Errorf("%s: cache of %d bytes (CHANGERATE_CACHE_BYTES=%q) is more than half of the memory limit %d", c, cache, v, limit)
			}
			if g, ok := e["GOMEMLIMIT"]; ok {
				gl, err := parseBytes(g)
				if err != nil || gl >= limit || gl <= cache {
					t.Errorf("%s: GOMEMLIMIT=%q must lie between the cache (%d) and the memory limit (%d)", c, g, cache, limit)
				}
			}
		}
	})
}
