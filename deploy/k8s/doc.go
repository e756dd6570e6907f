// Package k8s holds the Kubernetes manifests of changerate (kustomize layout, see README.md). It has no code:
// its test (go test ./deploy/k8s) parses every manifest and checks it against the binaries' configuration.
package k8s
