package k8s

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// ---------------------------------------------------------------------------------------------------------------
// Loading

// object is one rendered resource as generic maps (for the invariants below); decode_test.go decodes the same
// resources strictly into their API types.
type object struct {
	file string // the overlay it was rendered from
	m    map[string]any
}

func (o object) kind() string      { return str(o.m, "kind") }
func (o object) name() string      { return str(o.m, "metadata", "name") }
func (o object) namespace() string { return str(o.m, "metadata", "namespace") }
func (o object) String() string {
	return fmt.Sprintf("%s %s/%s (%s)", o.kind(), o.namespace(), o.name(), o.file)
}

// get walks maps by key and sequences by index.
func get(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			s, ok := v.([]any)
			if !ok || k >= len(s) {
				return nil
			}
			v = s[k]
		}
	}
	return v
}

func str(v any, keys ...any) string {
	s, _ := get(v, keys...).(string)
	return s
}

func mapAt(v any, keys ...any) map[string]any {
	m, _ := get(v, keys...).(map[string]any)
	return m
}

func seqAt(v any, keys ...any) []any {
	s, _ := get(v, keys...).([]any)
	return s
}

func intAt(v any, keys ...any) (int64, bool) {
	n, ok := get(v, keys...).(int64)
	return n, ok
}

// objects parses every YAML document of every manifest file.

func (m *manifests) byKind(kind string) []object {
	var out []object
	for _, o := range m.objs {
		if o.kind() == kind {
			out = append(out, o)
		}
	}
	return out
}

func (m *manifests) find(kind, namespace, name string) (object, bool) {
	for _, o := range m.byKind(kind) {
		if o.name() == name && o.namespace() == namespace {
			return o, true
		}
	}
	return object{}, false
}

// ---------------------------------------------------------------------------------------------------------------
// The variables the binaries accept

var (
	acceptOnce sync.Once
	accepted   map[string]map[string]bool   // binary -> CHANGERATE_* names
	defaultsOf map[string]map[string]string // binary -> CHANGERATE_* name -> default ("" for none)
	acceptErr  error
)

// acceptedVars runs the binaries' own references: aggregator --config-reference (a Markdown table) and
// ingest -h (each option ends with "(env CHANGERATE_...)").
func acceptedVars(t *testing.T) map[string]map[string]bool {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH: cannot ask the binaries which variables they accept")
	}
	acceptOnce.Do(func() {
		accepted = map[string]map[string]bool{}
		defaultsOf = map[string]map[string]string{}
		for _, c := range []struct {
			binary string
			args   []string
			re     *regexp.Regexp
		}{
			{"aggregator", []string{"run", "./cmd/aggregator", "--config-reference"}, regexp.MustCompile("(?m)^\\| `(CHANGERATE_[A-Z0-9_]+)` \\|")},
			{"ingest", []string{"run", "./cmd/ingest", "--config-reference"}, regexp.MustCompile("(?m)^\\| `(CHANGERATE_[A-Z0-9_]+)` \\|")},
		} {
			cmd := exec.Command(goBin, c.args...)
			cmd.Dir = filepath.Join("..", "..")
			// The test's own CHANGERATE_* variables must not change (or break) the binaries' output.
			cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "CHANGERATE_") })
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			runErr := cmd.Run()
			var exitErr *exec.ExitError
			if runErr != nil && !errors.As(runErr, &exitErr) { // -h may exit non-zero; its output is what counts
				acceptErr = fmt.Errorf("go %s: %v", strings.Join(c.args, " "), runErr)
				return
			}
			names := map[string]bool{}
			for _, m := range c.re.FindAllStringSubmatch(out.String(), -1) {
				names[m[1]] = true
			}
			if len(names) < 10 || !names["CHANGERATE_KAFKA_BROKERS"] {
				acceptErr = fmt.Errorf("go %s: found %d variables (no CHANGERATE_KAFKA_BROKERS) in:\n%s", strings.Join(c.args, " "), len(names), out.String())
				return
			}
			accepted[c.binary] = names
			defs := map[string]string{}
			for _, m := range regexp.MustCompile("(?m)^\\| `(CHANGERATE_[A-Z0-9_]+)` \\| `[^`]*` \\| `([^`]*)` \\|").FindAllStringSubmatch(out.String(), -1) {
				if m[2] != "—" {
					defs[m[1]] = m[2]
				}
			}
			defaultsOf[c.binary] = defs
		}
	})
	if acceptErr != nil {
		t.Fatal(acceptErr)
	}
	return accepted
}

// ---------------------------------------------------------------------------------------------------------------
// Workloads

var workloadKinds = map[string]bool{"Deployment": true, "StatefulSet": true, "DaemonSet": true, "Job": true}

type container struct {
	owner  object
	pod    map[string]any // the pod template's spec
	c      map[string]any
	binary string // aggregator or ingest, from the command
}

func (c container) String() string { return fmt.Sprintf("%s container %q", c.owner, str(c.c, "name")) }

func (m *manifests) containers(t *testing.T) []container {
	var out []container
	for _, o := range m.objs {
		if !workloadKinds[o.kind()] || o.namespace() != "changerate" {
			continue
		}
		pod := mapAt(o.m, "spec", "template", "spec")
		for _, field := range []string{"initContainers", "containers"} {
			for _, c := range seqAt(pod, field) {
				cm, _ := c.(map[string]any)
				bin := ""
				if cmd := seqAt(cm, "command"); len(cmd) > 0 {
					s, _ := cmd[0].(string)
					bin = path.Base(s)
				}
				out = append(out, container{owner: o, pod: pod, c: cm, binary: bin})
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no workload containers")
	}
	return out
}

func (m *manifests) aggregatorDeployment(t *testing.T) object {
	t.Helper()
	var found []object
	for _, c := range m.containers(t) {
		if c.binary == "aggregator" && c.owner.kind() == "Deployment" {
			found = append(found, c.owner)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want exactly one Deployment running /aggregator, got %d", len(found))
	}
	return found[0]
}

// env is the effective environment of a container: its envFrom ConfigMaps and Secrets, then env. A value taken
// from a field or a secret key is recorded as "<ref>".
func (m *manifests) env(t *testing.T, c container) map[string]string {
	t.Helper()
	ns := c.owner.namespace()
	out := map[string]string{}
	for _, ef := range seqAt(c.c, "envFrom") {
		kind, ref := "ConfigMap", mapAt(ef, "configMapRef")
		if ref == nil {
			kind, ref = "Secret", mapAt(ef, "secretRef")
		}
		src, ok := m.find(kind, ns, str(ref, "name"))
		if !ok {
			if get(ref, "optional") == true {
				continue
			}
			t.Errorf("%s: envFrom %s %q is not in the manifests", c, kind, str(ref, "name"))
			continue
		}
		for k, v := range data(src) {
			out[str(ef, "prefix")+k] = v
		}
	}
	for _, e := range seqAt(c.c, "env") {
		name := str(e, "name")
		if v, ok := get(e, "value").(string); ok {
			out[name] = v
			continue
		}
		for kind, field := range map[string]string{"ConfigMap": "configMapKeyRef", "Secret": "secretKeyRef"} {
			ref := mapAt(e, "valueFrom", field)
			if ref == nil {
				continue
			}
			src, ok := m.find(kind, ns, str(ref, "name"))
			if !ok {
				t.Errorf("%s: env %s: %s %q is not in the manifests", c, name, kind, str(ref, "name"))
				continue
			}
			if _, ok := data(src)[str(ref, "key")]; !ok {
				t.Errorf("%s: env %s: %s has no key %q", c, name, src, str(ref, "key"))
			}
		}
		out[name] = "<ref>"
	}
	return out
}

// data is the data of a ConfigMap or Secret (stringData as is; data base64, not decoded).
func data(o object) map[string]string {
	out := map[string]string{}
	for _, f := range []string{"data", "stringData"} {
		for k, v := range mapAt(o.m, f) {
			s, _ := v.(string)
			out[k] = s
		}
	}
	return out
}

func duration(t *testing.T, c container, e map[string]string, name, def string) time.Duration {
	t.Helper()
	v, ok := e[name]
	if !ok {
		v = def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s: %s=%q: %v", c, name, v, err)
	}
	return d
}

// containerPort resolves a port (a name or a number) to a port number of the container.
func containerPort(c container, port any) (int64, bool) {
	for _, p := range seqAt(c.c, "ports") {
		n, _ := intAt(p, "containerPort")
		switch port := port.(type) {
		case string:
			if str(p, "name") == port {
				return n, true
			}
		case int64:
			if n == port {
				return n, true
			}
		}
	}
	return 0, false
}

func TestWorkloadContainers(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, m *manifests) {
		type rule struct {
			readiness bool
			// the shutdown bound (variable and default) that terminationGracePeriodSeconds must exceed
			shutdownVar, shutdownDefault string
			// the variable holding the HTTP listen address, its default, and the paths it must serve
			addrVar, addrDefault string
			paths                []string
			// variables that must be set (service mode)
			required []string
		}
		rules := map[string]rule{
			"aggregator": {readiness: true, shutdownVar: "CHANGERATE_DRAIN_TIMEOUT", shutdownDefault: "10s",
				addrVar: "CHANGERATE_HTTP_ADDR", addrDefault: ":8080", paths: []string{"/healthz", "/readyz"},
				required: []string{"CHANGERATE_KAFKA_BROKERS", "CHANGERATE_REDIS_ADDRS"}},
			"ingest": {shutdownVar: "CHANGERATE_SHUTDOWN_TIMEOUT", shutdownDefault: "30s",
				addrVar: "CHANGERATE_HTTP_ADDR", paths: []string{"/healthz"},
				required: []string{"CHANGERATE_KAFKA_BROKERS"}},
		}
		seen := map[string]bool{}
		for _, c := range m.containers(t) {
			t.Run(c.owner.name()+"/"+str(c.c, "name"), func(t *testing.T) {
				r, ok := rules[c.binary]
				if !ok {
					t.Fatalf("%s: command %v is neither /aggregator nor /ingest", c, get(c.c, "command"))
				}
				seen[c.binary] = true
				e := m.env(t, c)

				// Probes.
				probes := []string{"livenessProbe"}
				if r.readiness {
					probes = append(probes, "readinessProbe")
				}
				addr, ok := e[r.addrVar]
				if !ok {
					addr = r.addrDefault
				}
				_, addrPort, _ := strings.Cut(addr, ":")
				for _, p := range probes {
					hg := mapAt(c.c, p, "httpGet")
					if hg == nil {
						t.Errorf("%s: no %s.httpGet", c, p)
						continue
					}
					if !slices.Contains(r.paths, str(hg, "path")) {
						t.Errorf("%s: %s path %q, want one of %v", c, p, str(hg, "path"), r.paths)
					}
					n, ok := containerPort(c, get(hg, "port"))
					if !ok {
						t.Errorf("%s: %s port %v is not a container port", c, p, get(hg, "port"))
					} else if strconv.FormatInt(n, 10) != addrPort {
						t.Errorf("%s: %s port %d, but %s=%q", c, p, n, r.addrVar, addr)
					}
				}
				if r.readiness && str(c.c, "readinessProbe", "httpGet", "path") != "/readyz" {
					t.Errorf("%s: readiness must probe /readyz", c)
				}

				// Resources.
				for _, kind := range []string{"requests", "limits"} {
					for _, res := range []string{"cpu", "memory"} {
						if get(c.c, "resources", kind, res) == nil {
							t.Errorf("%s: no resources.%s.%s", c, kind, res)
						}
					}
				}

				// Security.
				sc := mapAt(c.c, "securityContext")
				if get(sc, "runAsNonRoot") != true && !(get(sc, "runAsNonRoot") == nil && get(c.pod, "securityContext", "runAsNonRoot") == true) {
					t.Errorf("%s: runAsNonRoot is not true", c)
				}
				if get(sc, "readOnlyRootFilesystem") != true {
					t.Errorf("%s: readOnlyRootFilesystem is not true", c)
				}
				if get(sc, "allowPrivilegeEscalation") != false {
					t.Errorf("%s: allowPrivilegeEscalation is not false", c)
				}
				if !slices.Contains(seqAt(sc, "capabilities", "drop"), any("ALL")) {
					t.Errorf("%s: capabilities.drop lacks ALL", c)
				}
				if len(seqAt(sc, "capabilities", "add")) > 0 || get(sc, "privileged") == true {
					t.Errorf("%s: adds capabilities or is privileged", c)
				}
				if str(sc, "seccompProfile", "type") != "RuntimeDefault" && str(c.pod, "securityContext", "seccompProfile", "type") != "RuntimeDefault" {
					t.Errorf("%s: seccompProfile is not RuntimeDefault", c)
				}
				for _, v := range seqAt(c.pod, "volumes") {
					if get(v, "hostPath") != nil {
						t.Errorf("%s: hostPath volume %q (forbidden by the namespace's restricted Pod Security level)", c, str(v, "name"))
					}
				}

				// Shutdown: the kubelet's SIGKILL must come after the programs' own bound.
				grace, ok := intAt(c.pod, "terminationGracePeriodSeconds")
				if !ok {
					grace = 30
				}
				if bound := duration(t, c, e, r.shutdownVar, r.shutdownDefault); time.Duration(grace)*time.Second <= bound {
					t.Errorf("%s: terminationGracePeriodSeconds %d is not above %s=%v", c, grace, r.shutdownVar, bound)
				}

				// Prometheus scraping.
				ann := mapAt(c.owner.m, "spec", "template", "metadata", "annotations")
				if str(ann, "prometheus.io/scrape") != "true" || str(ann, "prometheus.io/path") != "/metrics" || str(ann, "prometheus.io/port") != addrPort {
					t.Errorf("%s: prometheus.io annotations %v, want scrape \"true\", path /metrics, port %q", c, ann, addrPort)
				}

				// Configuration.
				for _, v := range r.required {
					if e[v] == "" {
						t.Errorf("%s: %s is not set (service mode)", c, v)
					}
				}
				if c.binary == "ingest" {
					args := strings.Join(func() []string {
						var s []string
						for _, a := range seqAt(c.c, "args") {
							as, _ := a.(string)
							s = append(s, as)
						}
						return s
					}(), " ")
					if !strings.Contains(args, "--out=kafka") && e["CHANGERATE_OUT"] != "kafka" {
						t.Errorf("%s: does not write to Kafka (--out=kafka)", c)
					}
				}
			})
		}
		for b := range rules {
			if !seen[b] {
				t.Errorf("no workload runs /%s", b)
			}
		}
	})
}

// TestEnvNames: every CHANGERATE_* variable a container gets, by env or by envFrom, is one its binary accepts; a
// ConfigMap or Secret loaded with envFrom holds only such variables.
func TestEnvNames(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, m *manifests) {
		acc := acceptedVars(t)
		// The same name with a different meaning in the two binaries: must not be in a source both load.
		differ := []string{"CHANGERATE_OUT", "CHANGERATE_BATCH_SIZE", "CHANGERATE_KAFKA_GROUP", "CHANGERATE_KAFKA_CLIENT_ID"}
		loadedBy := map[string][]string{} // ConfigMap/Secret -> binaries loading it with envFrom
		for _, c := range m.containers(t) {
			names, ok := acc[c.binary]
			if !ok {
				t.Errorf("%s: unknown binary %q", c, c.binary)
				continue
			}
			for _, e := range seqAt(c.c, "env") {
				n := str(e, "name")
				if strings.HasPrefix(n, "CHANGERATE_") && !names[n] {
					t.Errorf("%s: env %s is not a variable of %s", c, n, c.binary)
				}
			}
			for _, ef := range seqAt(c.c, "envFrom") {
				kind, ref := "ConfigMap", mapAt(ef, "configMapRef")
				if ref == nil {
					kind, ref = "Secret", mapAt(ef, "secretRef")
				}
				src, ok := m.find(kind, c.owner.namespace(), str(ref, "name"))
				if !ok {
					t.Errorf("%s: envFrom %s %q is not in the manifests", c, kind, str(ref, "name"))
					continue
				}
				loadedBy[src.String()] = append(loadedBy[src.String()], c.binary)
				for k := range data(src) {
					if n := str(ef, "prefix") + k; !names[n] {
						t.Errorf("%s: key %s of %s (envFrom) is not a variable of %s", c, n, src, c.binary)
					}
				}
				if !slices.Contains(loadedBy[src.String()], "aggregator") || !slices.Contains(loadedBy[src.String()], "ingest") {
					continue
				}
				for k := range data(src) {
					if slices.Contains(differ, str(ef, "prefix")+k) {
						t.Errorf("%s: %s is loaded by both binaries, which give %s different meanings", src, src.name(), k)
					}
				}
			}
		}
		// Keys of the changerate namespace's ConfigMaps and Secrets that are not mounted as files (secrets,
		// the dashboard) are meant as variables.
		files := m.fileSources()
		for _, kind := range []string{"ConfigMap", "Secret"} {
			for _, o := range m.byKind(kind) {
				if o.namespace() != "changerate" || files[kind+"/"+o.name()] {
					continue
				}
				for k := range data(o) {
					if !acc["aggregator"][k] && !acc["ingest"][k] {
						t.Errorf("%s: key %s is a variable of neither binary", o, k)
					}
				}
			}
		}
	})
}

func labelsMatch(selector, labels map[string]any) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func TestPodDisruptionBudget(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, m *manifests) {
		agg := m.aggregatorDeployment(t)
		podLabels := mapAt(agg.m, "spec", "template", "metadata", "labels")
		if !labelsMatch(mapAt(agg.m, "spec", "selector", "matchLabels"), podLabels) {
			t.Errorf("%s: selector does not match its pod template", agg)
		}
		found := false
		for _, pdb := range m.byKind("PodDisruptionBudget") {
			if pdb.namespace() != agg.namespace() || !labelsMatch(mapAt(pdb.m, "spec", "selector", "matchLabels"), podLabels) {
				continue
			}
			found = true
			if n, ok := intAt(pdb.m, "spec", "maxUnavailable"); !ok || n != 1 {
				t.Errorf("%s: maxUnavailable %v, want 1", pdb, get(pdb.m, "spec", "maxUnavailable"))
			}
		}
		if !found {
			t.Errorf("no PodDisruptionBudget selects the aggregator pods %v", podLabels)
		}
	})
}

func TestServices(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, m *manifests) {
		for _, svc := range m.byKind("Service") {
			if svc.namespace() != "changerate" {
				if !m.selectsPods(svc.namespace(), mapAt(svc.m, "spec", "selector")) {
					t.Errorf("%s: selector matches no workload", svc)
				}
				continue
			}
			sel := mapAt(svc.m, "spec", "selector")
			var match []container
			for _, c := range m.containers(t) {
				if c.owner.namespace() == svc.namespace() && labelsMatch(sel, mapAt(c.owner.m, "spec", "template", "metadata", "labels")) {
					match = append(match, c)
				}
			}
			if len(match) == 0 {
				t.Errorf("%s: selector %v matches no workload", svc, sel)
				continue
			}
			for _, p := range seqAt(svc.m, "spec", "ports") {
				tp := get(p, "targetPort")
				if tp == nil {
					tp = get(p, "port")
				}
				for _, c := range match {
					if _, ok := containerPort(c, tp); !ok {
						t.Errorf("%s: targetPort %v is not a port of %s", svc, tp, c)
					}
				}
			}
		}
		agg := m.aggregatorDeployment(t)
		for _, svc := range m.byKind("Service") {
			if labelsMatch(mapAt(svc.m, "spec", "selector"), mapAt(agg.m, "spec", "template", "metadata", "labels")) {
				return
			}
		}
		t.Error("no Service selects the aggregator")
	})
}

// topic finds the KafkaTopic of a Kafka topic name.
func (m *manifests) topic(t *testing.T, name string) object {
	t.Helper()
	for _, o := range m.byKind("KafkaTopic") {
		tn := str(o.m, "spec", "topicName")
		if tn == "" {
			tn = o.name()
		}
		if tn == name {
			return o
		}
	}
	t.Fatalf("no KafkaTopic for topic %q", name)
	return object{}
}

// aggregatorEnv is the effective environment of the aggregator container.
func (m *manifests) aggregatorEnv(t *testing.T) map[string]string {
	for _, c := range m.containers(t) {
		if c.binary == "aggregator" {
			return m.env(t, c)
		}
	}
	t.Fatal("no aggregator container")
	return nil
}

func setting(e map[string]string, name, def string) string {
	if v, ok := e[name]; ok {
		return v
	}
	return def
}

// fileSources are the ConfigMaps and Secrets ("Kind/name") used other than as environment: mounted as volumes,
// referenced by KEDA, or picked up by Grafana (label grafana_dashboard).
func (m *manifests) fileSources() map[string]bool {
	out := map[string]bool{}
	for _, o := range m.objs {
		if workloadKinds[o.kind()] {
			for _, v := range seqAt(o.m, "spec", "template", "spec", "volumes") {
				if n := str(v, "secret", "secretName"); n != "" {
					out["Secret/"+n] = true
				}
				if n := str(v, "configMap", "name"); n != "" {
					out["ConfigMap/"+n] = true
				}
			}
		}
		if o.kind() == "TriggerAuthentication" {
			for _, r := range seqAt(o.m, "spec", "secretTargetRef") {
				out["Secret/"+str(r, "name")] = true
			}
		}
		if str(o.m, "metadata", "labels", "grafana_dashboard") != "" {
			out[o.kind()+"/"+o.name()] = true
		}
	}
	return out
}

// selectsPods reports whether selector matches the pod template of a workload in namespace.
func (m *manifests) selectsPods(namespace string, selector map[string]any) bool {
	for _, o := range m.objs {
		if workloadKinds[o.kind()] && o.namespace() == namespace && labelsMatch(selector, mapAt(o.m, "spec", "template", "metadata", "labels")) {
			return true
		}
	}
	return false
}
