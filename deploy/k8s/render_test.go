package k8s

import (
	"fmt"
	"sync"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// overlays are the deployable kustomizations; every invariant is checked on each.
var overlays = []string{"overlays/dev", "overlays/prod", "overlays/prod-hpa"}

// examples are further kustomizations (Redis examples) that are decoded strictly but not deployed on their own.
var examples = []string{"redis/standalone", "redis/sentinel", "redis/cluster", "strimzi"}

// manifests is one kustomization as rendered by the kustomize API (what `kubectl apply -k` applies).
type manifests struct {
	name string
	res  resmap.ResMap
	objs []object
}

var (
	renderMu    sync.Mutex
	renderCache = map[string]*manifests{}
)

// render builds dir with the Go kustomize API (krusty, the library behind `kubectl kustomize`), once per test
// binary.
func render(t *testing.T, dir string) *manifests {
	t.Helper()
	renderMu.Lock()
	defer renderMu.Unlock()
	if m, ok := renderCache[dir]; ok {
		return m
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	m := &manifests{name: dir, res: rm}
	for _, r := range rm.Resources() {
		mm, err := r.Map()
		if err != nil {
			t.Fatalf("%s: %s: %v", dir, r.CurId(), err)
		}
		m.objs = append(m.objs, object{file: dir, m: normalize(mm).(map[string]any)})
	}
	if len(m.objs) == 0 {
		t.Fatalf("kustomize build %s: no resources", dir)
	}
	renderCache[dir] = m
	return m
}

// forEachOverlay runs f as a subtest on every overlay.
func forEachOverlay(t *testing.T, f func(t *testing.T, m *manifests)) {
	for _, dir := range overlays {
		t.Run(dir, func(t *testing.T) { f(t, render(t, dir)) })
	}
}

// normalize turns the YAML decoder's ints into int64, recursively, so that the helpers can compare them.
func normalize(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = normalize(x)
		}
		return v
	case []any:
		for i, x := range v {
			v[i] = normalize(x)
		}
		return v
	case int:
		return int64(v)
	case float64:
		if v == float64(int64(v)) {
			return int64(v)
		}
	}
	return v
}

func (m *manifests) String() string { return fmt.Sprintf("%s (%d objects)", m.name, len(m.objs)) }
