package k8s

// A first deploy (issue 32): every volume a pod mounts is defined, the dev overlay runs the image that
// docs/deploying.md builds and loads into the local cluster, with the Kafka and Redis it names, and the
// NetworkPolicy admits the in-cluster API client the page documents.

import (
	"bytes"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/changerate/changerate/internal/sample"
)

var updateDevLog = flag.Bool("update-dev-log", false, "rewrite overlays/dev/access.log from internal/sample")

// devDoc is the page that takes an operator from nothing to a running dev stack.
const devDoc = "../../docs/deploying.md"

// devSample is the Squid log the dev overlay's ingest reads: 3 days of 4 proxied pages (one per change class)
// whose true rates are known (sample.ProxyPages), in the past so that no observation is "in the future".
func devSample() sample.Config {
	c := sample.Default()
	c.Seed, c.Start, c.Duration, c.PerClass = 7, time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC), 72*time.Hour, 1
	return c
}

// TestDevSampleLog: overlays/dev/access.log is internal/sample's log (-update-dev-log rewrites it), small
// enough for a ConfigMap (1 MiB).
func TestDevSampleLog(t *testing.T) {
	var b bytes.Buffer
	if err := devSample().WriteSquidLog(&b); err != nil {
		t.Fatal(err)
	}
	const file = "overlays/dev/access.log"
	if *updateDevLog {
		if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, b.Bytes()) {
		t.Errorf("%s is not internal/sample's log (go test ./deploy/k8s -run TestDevSampleLog -args -update-dev-log)", file)
	}
	if len(got) > 900<<10 {
		t.Errorf("%s has %d bytes: too large for a ConfigMap (1 MiB with its metadata)", file, len(got))
	}
}

// TestVolumesDefined: every PersistentVolumeClaim and ConfigMap a pod template mounts is defined by the
// overlay (a claim of a StatefulSet's volumeClaimTemplates is created with the pod). Issue 32: the ingest
// mounted the claim squid-logs, which nothing defined, so its pod stayed Pending.
func TestVolumesDefined(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, m *manifests) {
		for _, o := range m.objs {
			if !workloadKinds[o.kind()] {
				continue
			}
			templates := map[string]bool{}
			for _, vct := range seqAt(o.m, "spec", "volumeClaimTemplates") {
				templates[str(vct, "metadata", "name")] = true
			}
			for _, v := range seqAt(o.m, "spec", "template", "spec", "volumes") {
				if claim := str(v, "persistentVolumeClaim", "claimName"); claim != "" {
					if _, ok := m.find("PersistentVolumeClaim", o.namespace(), claim); !ok {
						t.Errorf("%s: volume %q mounts the claim %s/%s, which the overlay does not define (the pod would stay Pending)",
							o, str(v, "name"), o.namespace(), claim)
					}
				}
				if cm := str(v, "configMap", "name"); cm != "" {
					if _, ok := m.find("ConfigMap", o.namespace(), cm); !ok {
						t.Errorf("%s: volume %q mounts the ConfigMap %s/%s, which the overlay does not define", o, str(v, "name"), o.namespace(), cm)
					}
				}
			}
			for _, c := range seqAt(o.m, "spec", "template", "spec", "containers") {
				for _, vm := range seqAt(c, "volumeMounts") {
					name := str(vm, "name")
					found := templates[name]
					for _, v := range seqAt(o.m, "spec", "template", "spec", "volumes") {
						found = found || str(v, "name") == name
					}
					if !found {
						t.Errorf("%s: container %s mounts volume %q, which the pod does not have", o, str(c, "name"), name)
					}
				}
			}
		}
	})
}

// documentedImage is the image docs/deploying.md builds and loads into the kind cluster: `make image` tags
// $(IMAGE):$(VERSION) (the Makefile's defaults), and the page must load exactly that tag.
func documentedImage(t *testing.T) string {
	t.Helper()
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	img := regexp.MustCompile(`(?m)^IMAGE \?= (\S+)$`).FindSubmatch(mk)
	if img == nil {
		t.Fatal("the Makefile has no IMAGE ?= default")
	}
	if !regexp.MustCompile(`(?m)^\s+-t \$\(IMAGE\):\$\(VERSION\) \.$`).Match(mk) {
		t.Fatal("the Makefile's image target does not tag $(IMAGE):$(VERSION)")
	}
	v, err := os.ReadFile("../../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	want := string(img[1]) + ":" + strings.TrimSpace(string(v))
	doc, err := os.ReadFile(devDoc)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^make image\b`).Match(doc) {
		t.Errorf("%s does not build the image with `make image`", devDoc)
	}
	load := regexp.MustCompile(`(?m)^kind load docker-image (\S+(?: VERSION\))?)`).FindSubmatch(doc)
	if load == nil {
		t.Fatalf("%s does not load the image into kind (kind load docker-image ...)", devDoc)
	}
	if got := strings.ReplaceAll(string(load[1]), "$(cat VERSION)", strings.TrimSpace(string(v))); got != want {
		t.Errorf("%s loads %s into kind, but make image builds %s", devDoc, load[1], want)
	}
	return want
}

// TestDevImageIsDocumentedBuild: the dev overlay's changerate containers run the image the page builds and
// loads, without pulling it (kind load puts it on the node; no registry has it).
func TestDevImageIsDocumentedBuild(t *testing.T) {
	want := documentedImage(t)
	m := render(t, "overlays/dev")
	n := 0
	for _, c := range m.containers(t) {
		if c.binary != "aggregator" && c.binary != "ingest" {
			continue
		}
		n++
		if img := str(c.c, "image"); img != want {
			t.Errorf("%s: image %s, but %s builds and loads %s", c, img, devDoc, want)
		}
		if p := str(c.c, "imagePullPolicy"); p != "IfNotPresent" && p != "Never" {
			t.Errorf("%s: imagePullPolicy %q would pull an image no registry has; want IfNotPresent or Never", c, p)
		}
	}
	if n < 2 {
		t.Errorf("%d changerate containers in the dev overlay, want the aggregator and the ingest", n)
	}
}

// TestDevHasKafkaAndRedis: the brokers and the Redis the dev overlay's programs are given are Services the
// overlay itself defines, on the ports named, with a workload behind each: nothing to install first.
func TestDevHasKafkaAndRedis(t *testing.T) {
	m := render(t, "overlays/dev")
	for _, c := range m.containers(t) {
		e := m.env(t, c)
		for _, v := range []string{"CHANGERATE_KAFKA_BROKERS", "CHANGERATE_REDIS_ADDRS"} {
			if e[v] == "" {
				continue
			}
			for _, addr := range strings.Split(e[v], ",") {
				host, port, err := net.SplitHostPort(addr)
				if err != nil {
					t.Fatalf("%s: %s=%q: %v", c, v, addr, err)
				}
				name, ns, _ := strings.Cut(strings.TrimSuffix(strings.TrimSuffix(host, ".cluster.local"), ".svc"), ".")
				svc, ok := m.find("Service", ns, name)
				if !ok {
					t.Errorf("%s: %s=%s: the dev overlay defines no Service %s/%s", c, v, addr, ns, name)
					continue
				}
				var target any
				for _, p := range seqAt(svc.m, "spec", "ports") {
					if n, _ := intAt(p, "port"); strconv.FormatInt(n, 10) == port {
						target = get(p, "targetPort")
					}
				}
				if target == nil {
					t.Errorf("%s: %s=%s: Service %s/%s has no port %s", c, v, addr, ns, name, port)
					continue
				}
				if !m.serves(ns, mapAt(svc.m, "spec", "selector"), target) {
					t.Errorf("%s: %s=%s: no workload of the dev overlay behind Service %s/%s port %v", c, v, addr, ns, name, target)
				}
			}
		}
	}
}

// serves reports whether a workload in namespace whose pod labels match selector has a container port
// target (a name or a number).
func (m *manifests) serves(namespace string, selector map[string]any, target any) bool {
	for _, o := range m.objs {
		if !workloadKinds[o.kind()] || o.namespace() != namespace || !labelsMatch(selector, mapAt(o.m, "spec", "template", "metadata", "labels")) {
			continue
		}
		for _, c := range seqAt(o.m, "spec", "template", "spec", "containers") {
			for _, p := range seqAt(c, "ports") {
				n, _ := intAt(p, "containerPort")
				if str(p, "name") == fmt.Sprint(target) || fmt.Sprint(n) == fmt.Sprint(target) {
					return true
				}
			}
		}
	}
	return false
}

// apiClient is the in-cluster client of the query API that docs/deploying.md documents: a pod labelled
// changerate.io/api-client: "true" in its own namespace (a crawler asking for /v1/plan).
var apiClient = struct {
	namespace string
	labels    map[string]string
}{"crawler", map[string]string{"changerate.io/api-client": "true", "app": "crawler"}}

// TestAPIClientAdmitted: the rendered NetworkPolicies of every overlay let the documented client reach the
// aggregator's HTTP port (issue 32: only namespace monitoring could, so a crawler could not call /v1/plan),
// and do not let the same pod without the label in.
func TestAPIClientAdmitted(t *testing.T) {
	doc, err := os.ReadFile(devDoc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, []byte(`changerate.io/api-client: "true"`)) || !bytes.Contains(doc, []byte("changerate.io/api-client=true")) {
		t.Errorf("%s does not document the label changerate.io/api-client: \"true\" (and its kubectl form)", devDoc)
	}
	forEachOverlay(t, func(t *testing.T, m *manifests) {
		agg := m.aggregatorDeployment(t)
		podLabels := map[string]string{}
		for k, v := range mapAt(agg.m, "spec", "template", "metadata", "labels") {
			podLabels[k], _ = v.(string)
		}
		port := int32(0)
		portName := ""
		for _, c := range seqAt(agg.m, "spec", "template", "spec", "containers") {
			for _, p := range seqAt(c, "ports") {
				if str(p, "name") == "http" {
					n, _ := intAt(p, "containerPort")
					port, portName = int32(n), "http"
				}
			}
		}
		if port == 0 {
			t.Fatal("the aggregator has no container port named http")
		}
		nps := typedOf[networkingv1.NetworkPolicy](t, m)
		nsLabels := map[string]string{corev1.LabelMetadataName: apiClient.namespace}
		if !admits(t, nps, agg.namespace(), podLabels, port, portName, apiClient.namespace, nsLabels, apiClient.labels) {
			t.Errorf("no NetworkPolicy admits a pod labelled %v in namespace %s to the aggregator's port %d", apiClient.labels, apiClient.namespace, port)
		}
		unlabelled := map[string]string{"app": "crawler"}
		if admits(t, nps, agg.namespace(), podLabels, port, portName, apiClient.namespace, nsLabels, unlabelled) {
			t.Errorf("a pod without changerate.io/api-client in namespace %s reaches the aggregator's port %d: the policy admits too much", apiClient.namespace, port)
		}
	})
}

// admits evaluates the NetworkPolicy semantics for one connection: a pod (peerNS with namespace labels
// nsLabels, pod labels peer) connecting to port (named portName) of a pod with labels target in namespace ns.
// The connection is allowed when some policy selecting the target for Ingress has a rule whose ports include
// port and whose from peers include the client (no from: everyone). Without a policy selecting the target,
// everything is allowed; the manifests have a default-deny (TestNetworkPolicy), so that case is not modelled.
func admits(t *testing.T, nps []*networkingv1.NetworkPolicy, ns string, target map[string]string, port int32, portName string,
	peerNS string, nsLabels, peer map[string]string) bool {
	sel := func(ls *metav1.LabelSelector, l map[string]string) bool {
		s, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			t.Fatalf("label selector %v: %v", ls, err)
		}
		return s.Matches(labels.Set(l))
	}
	for _, np := range nps {
		if np.Namespace != ns || !sel(&np.Spec.PodSelector, target) {
			continue
		}
		ingress := len(np.Spec.PolicyTypes) == 0
		for _, pt := range np.Spec.PolicyTypes {
			ingress = ingress || pt == networkingv1.PolicyTypeIngress
		}
		if !ingress {
			continue
		}
		for _, r := range np.Spec.Ingress {
			portOK := len(r.Ports) == 0
			for _, p := range r.Ports {
				switch {
				case p.Port == nil:
					portOK = true
				case p.Port.Type == intstr.String:
					portOK = portOK || p.Port.StrVal == portName
				default:
					portOK = portOK || p.Port.IntVal == port || p.EndPort != nil && p.Port.IntVal <= port && port <= *p.EndPort
				}
			}
			if !portOK {
				continue
			}
			if len(r.From) == 0 {
				return true
			}
			for _, f := range r.From {
				if f.IPBlock != nil {
					continue // pod traffic is matched by selectors here
				}
				nsOK := f.NamespaceSelector == nil && peerNS == ns || f.NamespaceSelector != nil && sel(f.NamespaceSelector, nsLabels)
				podOK := f.PodSelector == nil || sel(f.PodSelector, peer)
				if nsOK && podOK {
					return true
				}
			}
		}
	}
	return false
}

// TestKubectlKustomize: `kubectl kustomize` (the kustomize built into the kubectl that `kubectl apply -k`
// runs, older than the library the tests render with) renders every overlay into the same objects (kind,
// namespace, name) as the tests' renderer. Skipped without kubectl.
func TestKubectlKustomize(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("no kubectl (apt-get install kubectl)")
	}
	forEachOverlay(t, func(t *testing.T, m *manifests) {
		out, err := exec.Command(kubectl, "kustomize", m.name).Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("kubectl kustomize %s: %v\n%s", m.name, err, stderr)
		}
		var got []string
		for _, doc := range strings.Split(string(out), "\n---\n") {
			var o map[string]any
			if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
				t.Fatalf("kubectl kustomize %s: %v", m.name, err)
			}
			if len(o) > 0 {
				got = append(got, object{m: o}.String())
			}
		}
		var want []string
		for _, o := range m.objs {
			want = append(want, object{m: o.m}.String())
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("kubectl kustomize %s renders\n%s\nthe tests' renderer\n%s", m.name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}
