package k8s

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Checked schemas of the custom resources whose Go types are not worth their modules here: KEDA's
// (github.com/kedacore/keda/v2 is the whole operator, hundreds of packages with cloud SDKs, to get two types)
// and Strimzi's (a Java project: there is no Go module). Each struct has exactly the fields of the CRD
// (keda.sh/v1alpha1 as of KEDA 2.16; kafka.strimzi.io/v1 as of Strimzi 0.49) that a changerate deployment may
// use; strict decoding (decode_test.go) rejects any other field, so a typo or a field of another version fails
// the test instead of being ignored by the API server. The values are checked in invariants_test.go.

type kedaScaledObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		ScaleTargetRef struct {
			APIVersion string `json:"apiVersion,omitempty"`
			Kind       string `json:"kind,omitempty"`
			Name       string `json:"name"`
		} `json:"scaleTargetRef"`
		PollingInterval  *int32 `json:"pollingInterval,omitempty"`
		CooldownPeriod   *int32 `json:"cooldownPeriod,omitempty"`
		IdleReplicaCount *int32 `json:"idleReplicaCount,omitempty"`
		MinReplicaCount  *int32 `json:"minReplicaCount,omitempty"`
		MaxReplicaCount  *int32 `json:"maxReplicaCount,omitempty"`
		Advanced         *struct {
			RestoreToOriginalReplicaCount bool `json:"restoreToOriginalReplicaCount,omitempty"`
			HorizontalPodAutoscalerConfig *struct {
				Name     string                                         `json:"name,omitempty"`
				Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
			} `json:"horizontalPodAutoscalerConfig,omitempty"`
		} `json:"advanced,omitempty"`
		Triggers []struct {
			Type              string            `json:"type"`
			Name              string            `json:"name,omitempty"`
			MetricType        string            `json:"metricType,omitempty"`
			UseCachedMetrics  bool              `json:"useCachedMetrics,omitempty"`
			Metadata          map[string]string `json:"metadata"`
			AuthenticationRef *struct {
				Name string `json:"name"`
				Kind string `json:"kind,omitempty"`
			} `json:"authenticationRef,omitempty"`
		} `json:"triggers"`
	} `json:"spec"`
}

type kedaTriggerAuthentication struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		SecretTargetRef []struct {
			Parameter string `json:"parameter"`
			Name      string `json:"name"`
			Key       string `json:"key"`
		} `json:"secretTargetRef,omitempty"`
	} `json:"spec"`
}

type strimziKafkaTopic struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		TopicName  string            `json:"topicName,omitempty"`
		Partitions int32             `json:"partitions"`
		Replicas   int32             `json:"replicas"`
		Config     map[string]string `json:"config,omitempty"`
	} `json:"spec"`
}

type strimziACL struct {
	Resource struct {
		Type        string `json:"type"`
		Name        string `json:"name,omitempty"`
		PatternType string `json:"patternType,omitempty"`
	} `json:"resource"`
	Operations []string `json:"operations"`
	Host       string   `json:"host,omitempty"`
}

type strimziKafkaUser struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Authentication struct {
			Type string `json:"type"`
		} `json:"authentication"`
		Authorization struct {
			Type string       `json:"type"`
			ACLs []strimziACL `json:"acls"`
		} `json:"authorization"`
	} `json:"spec"`
}
