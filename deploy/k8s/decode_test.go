package k8s

import (
	"errors"
	"fmt"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// decodeStrict decodes a YAML document as the API server does, only stricter: YAML to JSON (duplicate keys
// are errors), then case-sensitive JSON decoding (sigs.k8s.io/json, the API machinery's decoder) that
// rejects unknown and duplicate fields. encoding/json alone would accept "targetport" for "targetPort".
func decodeStrict(doc []byte, v any) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(j, v, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// newTyped returns a pointer to the Go type of apiVersion/kind: the Kubernetes API's own types (k8s.io/api),
// the Prometheus Operator's (its small apis module), and the checked schemas of schema_test.go for KEDA and
// Strimzi. Any other kind is an error: the test must know everything it renders.
func newTyped(apiVersion, kind string) (any, error) {
	switch apiVersion + " " + kind {
	case "v1 Namespace":
		return &corev1.Namespace{}, nil
	case "v1 ServiceAccount":
		return &corev1.ServiceAccount{}, nil
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}, nil
	case "v1 Secret":
		return &corev1.Secret{}, nil
	case "v1 Service":
		return &corev1.Service{}, nil
	case "v1 PersistentVolumeClaim":
		return &corev1.PersistentVolumeClaim{}, nil
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}, nil
	case "apps/v1 StatefulSet":
		return &appsv1.StatefulSet{}, nil
	case "batch/v1 Job":
		return &batchv1.Job{}, nil
	case "policy/v1 PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, nil
	case "networking.k8s.io/v1 NetworkPolicy":
		return &networkingv1.NetworkPolicy{}, nil
	case "autoscaling/v2 HorizontalPodAutoscaler":
		return &autoscalingv2.HorizontalPodAutoscaler{}, nil
	case "monitoring.coreos.com/v1 ServiceMonitor":
		return &monitoringv1.ServiceMonitor{}, nil
	case "monitoring.coreos.com/v1 PodMonitor":
		return &monitoringv1.PodMonitor{}, nil
	case "monitoring.coreos.com/v1 PrometheusRule":
		return &monitoringv1.PrometheusRule{}, nil
	case "keda.sh/v1alpha1 ScaledObject":
		return &kedaScaledObject{}, nil
	case "keda.sh/v1alpha1 TriggerAuthentication":
		return &kedaTriggerAuthentication{}, nil
	case "kafka.strimzi.io/v1 KafkaTopic":
		return &strimziKafkaTopic{}, nil
	case "kafka.strimzi.io/v1 KafkaUser":
		return &strimziKafkaUser{}, nil
	}
	return nil, fmt.Errorf("no Go type or schema for apiVersion %q kind %q", apiVersion, kind)
}

// typed decodes every resource of m strictly (unknown or duplicate fields are errors; quantities, durations
// and enumerated types are parsed by their types) and returns them in order.
func (m *manifests) typed(t *testing.T) []any {
	t.Helper()
	var out []any
	for _, r := range m.res.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			t.Fatalf("%s: %s: %v", m.name, r.CurId(), err)
		}
		v, err := newTyped(r.GetApiVersion(), r.GetKind())
		if err != nil {
			t.Errorf("%s: %s: %v", m.name, r.CurId(), err)
			continue
		}
		if err := decodeStrict(y, v); err != nil {
			t.Errorf("%s: %s does not decode strictly into %T: %v", m.name, r.CurId(), v, err)
			continue
		}
		out = append(out, v)
	}
	return out
}

// typedOf returns the resources of type T.
func typedOf[T any](t *testing.T, m *manifests) []*T {
	var out []*T
	for _, v := range m.typed(t) {
		if x, ok := v.(*T); ok {
			out = append(out, x)
		}
	}
	return out
}

// TestStrictDecoding builds every overlay and example and decodes each object strictly into its API type.
func TestStrictDecoding(t *testing.T) {
	for _, dir := range append(append([]string{}, overlays...), examples...) {
		t.Run(dir, func(t *testing.T) {
			m := render(t, dir)
			if n := len(m.typed(t)); n != len(m.objs) {
				t.Errorf("%d of %d objects decoded", n, len(m.objs))
			}
		})
	}
}

// TestStrictDecodingCatchesTypos: the strict decoder is what makes the test above able to fail.
func TestStrictDecodingCatchesTypos(t *testing.T) {
	for _, tc := range []struct{ apiVersion, kind, doc string }{
		{"apps/v1", "Deployment", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replica: 2}\n"},
		{"v1", "Service", "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {ports: [{port: 80, targetport: 8080}]}\n"},
		{"v1", "PersistentVolumeClaim", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: x}\nspec: {resources: {requests: {storage: ten-gigs}}}\n"},
		{"keda.sh/v1alpha1", "ScaledObject", "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {name: x}\nspec: {maxReplicas: 3}\n"},
		{"kafka.strimzi.io/v1", "KafkaUser", "apiVersion: kafka.strimzi.io/v1\nkind: KafkaUser\nmetadata: {name: x}\nspec: {authorization: {type: simple, acls: [{resource: {type: topic, name: t}, operation: Read}]}}\n"},
		{"monitoring.coreos.com/v1", "ServiceMonitor", "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: x}\nspec: {endpoint: [{port: http}]}\n"},
	} {
		v, err := newTyped(tc.apiVersion, tc.kind)
		if err != nil {
			t.Fatal(err)
		}
		if err := decodeStrict([]byte(tc.doc), v); err == nil {
			t.Errorf("%s %s: %q decoded without an error", tc.apiVersion, tc.kind, tc.doc)
		}
	}
	if _, err := newTyped("kafka.strimzi.io/v1beta1", "KafkaTopic"); err == nil {
		t.Error("an unknown apiVersion has a type")
	}
}
